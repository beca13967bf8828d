/**
 * @module A coordinator in a child process of its own, with an event-loop probe, driven over IPC
 * by bounded-work.test.ts. The probe measures how long the main thread held the event loop,
 * robustly on a loaded machine:
 *
 * - A 1 ms interval ticks for as long as the probe runs. Between two ticks the event loop ran one
 *   turn: every callback, microtask and GC pause in it. So the work done between two consecutive
 *   ticks bounds from above the longest stretch any single callback held the loop.
 * - That work is measured as the main thread's own CPU time (Linux: `/proc/self/task/<pid>/schedstat`,
 *   nanoseconds on CPU), not as wall time: on a shared two-core machine the process is often
 *   descheduled for tens of milliseconds, which wall time (and monitorEventLoopDelay) would count
 *   against the request. CPU time of this one thread excludes that, and excludes the libuv pool
 *   (argon2 hashing) and other threads, which do not hold the loop.
 * - `calibrate` burns a known amount of main-thread CPU in one synchronous block, so the test can
 *   check the probe sees a block of that size (and is not blind), and `baseline` figures come
 *   from trivial requests.
 *
 * - `reference` runs a fixed amount of work (no allocation, so no GC) and answers its CPU time:
 *   the test compares it with the least it took in the run to see how much slower the machine is
 *   right now (a loaded machine slows CPU time too: shared caches, hyperthreads, frequency).
 * - `gc` collects garbage (the child runs with --expose-gc), so a retried measurement does not pay
 *   for garbage earlier requests left.
 *
 * Messages in: {type:'reset'} | {type:'report'} | {type:'calibrate', ms} | {type:'reference'} |
 * {type:'gc'} | {type:'seed', ...}.
 * Messages out: {type:'ready', url} once listening, and one answer per message.
 */
import { mkdtempSync } from 'node:fs'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../../src/server.ts'
import { newRecordId } from '../../src/tools/ids.ts'
import { nowDate } from '../../src/tools/dates.ts'

const statFile = `/proc/self/task/${process.pid}/schedstat`

/** Nanoseconds the main thread has spent on a CPU. */
function threadCpuNs(): number {
  return Number(readFileSync(statFile, 'utf8').split(' ')[0])
}

let maxCpuNs = 0
let maxWallNs = 0
let lastCpu = threadCpuNs()
let lastWall = process.hrtime.bigint()
const tick = () => {
  const cpu = threadCpuNs()
  const wall = process.hrtime.bigint()
  maxCpuNs = Math.max(maxCpuNs, cpu - lastCpu)
  maxWallNs = Math.max(maxWallNs, Number(wall - lastWall))
  lastCpu = cpu
  lastWall = wall
}
setInterval(tick, 1)

const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-probed-'))
const server = await startServer({
  port: 0,
  host: '127.0.0.1',
  dataDir,
  initialCredits: 1000,
  tokenTtlSeconds: 3600,
  localNode: false,
  webDist: join(dataDir, 'no-web'),
})

/** The reference work's input: hashing it takes a few milliseconds of CPU. */
const referenceText = 'meshwork reference '.repeat(80_000)

type Message =
  | { type: 'reset' }
  | { type: 'report' }
  | { type: 'calibrate'; ms: number }
  | { type: 'reference' }
  | { type: 'gc' }
  | { type: 'seed'; user: string; conversation: string; model: string; count: number; text: string }

async function onMessage(message: Message) {
  switch (message.type) {
    case 'reset':
      tick()
      maxCpuNs = 0
      maxWallNs = 0
      return process.send!({ type: 'reset' })
    case 'report':
      tick()
      return process.send!({ type: 'report', cpuMs: maxCpuNs / 1e6, wallMs: maxWallNs / 1e6 })
    case 'calibrate': {
      const until = threadCpuNs() + message.ms * 1e6
      while (threadCpuNs() < until);
      return process.send!({ type: 'calibrate' })
    }
    case 'reference': {
      const start = threadCpuNs()
      let h = 0
      for (let i = 0; i < referenceText.length; i++) h = (h * 31 + referenceText.charCodeAt(i)) | 0
      const cpuMs = (threadCpuNs() - start) / 1e6
      return process.send!({ type: 'reference', cpuMs, h })
    }
    case 'gc':
      ;(globalThis as { gc?: () => void }).gc?.()
      return process.send!({ type: 'gc' })
    case 'seed': {
      // Rows an attacker could have made by chatting: long prompts and answers of their own.
      for (let i = 0; i < message.count; i++) {
        await server.core.database.db
          .insertInto('requests')
          .values({
            id: newRecordId(),
            user: message.user,
            conversation: message.conversation,
            model: message.model,
            prompt: message.text,
            response: message.text,
            status: 'completed',
            created: nowDate(),
            updated: nowDate(),
          })
          .execute()
      }
      return process.send!({ type: 'seed' })
    }
  }
}

// A failed message ends the probe loudly rather than as an unhandled rejection.
process.on('message', (message: Message) => {
  onMessage(message).catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
})

process.send!({ type: 'ready', url: server.url })
