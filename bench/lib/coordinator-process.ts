/**
 * @module Starts a coordinator in its own process (so load generation does not share its event
 * loop) on a fresh data directory, and waits until it answers.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// BENCH_SERVER_MAIN: another checkout's entry point (to compare two versions with one bench).
const mainTs =
  process.env.BENCH_SERVER_MAIN ??
  fileURLToPath(new URL('../../packages/server/src/main.ts', import.meta.url))

export interface CoordinatorProcess {
  url: string
  child: ChildProcess
  /** Its data directory (the SQLite file is meshwork.db inside). */
  dataDir: string
  stop(): Promise<void>
}

export async function startCoordinator(
  port: number,
  env: Record<string, string> = {},
  /** Node options before the entry point (--cpu-prof …). */
  nodeArgs: string[] = [],
): Promise<CoordinatorProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-bench-'))
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', mainTs], {
    // Benchmarks sign up and send from one address faster than a person: no sign-up or chat limits.
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      MESHWORK_DATA_DIR: dataDir,
      MESHWORK_LOCAL_NODE: '0',
      MESHWORK_SIGNUP_LIMIT: '0',
      MESHWORK_CHAT_RATE_LIMIT: '0',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  const end = Date.now() + 30_000
  while (Date.now() < end) {
    try {
      if ((await fetch(`${url}/api/health`)).ok) break
    } catch {
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  return {
    url,
    child,
    dataDir,
    async stop() {
      child.kill('SIGTERM')
      await new Promise((r) => child.once('exit', r))
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** CPU seconds (user + system) the process has used so far, from /proc (Linux). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // fields[11] and fields[12] are utime and stime in clock ticks (100 per second on Linux)
  return (Number(fields[11]) + Number(fields[12])) / 100
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}
