/**
 * @module A Redis of the test's own, for outage suites: a `redis-server` on a free port without
 * persistence (killed, it comes back empty, as in production without AOF/RDB, so every lease,
 * limit count and realtime entry is gone), which the test can kill (-9), start again on the same
 * port, or freeze (SIGSTOP: its connections stay open and nothing is answered, as in a network
 * partition) and thaw. Never touches TEST_REDIS_URL's Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process'

/** Every redis-server started here, killed when the test process exits however it exits. */
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL')
})

export class OwnRedis {
  private proc: ChildProcess | null = null
  constructor(readonly port: number) {}

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  /** Starts it (again, empty) and resolves once it accepts connections. */
  async start() {
    const args = ['--port', String(this.port), '--save', '', '--appendonly', 'no']
    const proc = spawn('/usr/bin/redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    this.proc = proc
    running.add(proc)
    proc.once('exit', () => running.delete(proc))
    await new Promise<void>((resolve, reject) => {
      let out = ''
      proc.stdout!.on('data', (d) => {
        out += String(d)
        if (out.includes('Ready to accept')) resolve()
      })
      proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)))
    })
  }

  async kill() {
    const proc = this.proc
    if (!proc || proc.exitCode !== null || proc.signalCode) return
    const gone = new Promise((resolve) => proc.once('exit', resolve))
    proc.kill('SIGKILL')
    await gone
  }

  /** Freezes it: connections stay open (new ones are even accepted), no command is answered. */
  pause() {
    this.proc?.kill('SIGSTOP')
  }

  resume() {
    this.proc?.kill('SIGCONT')
  }
}
