/**
 * @module start-command
 * `meshwork-node start`: connect with the stored credential and serve until interrupted.
 */
import type { CommandModule } from 'yargs'
import { MissingCredentialsError, readCredentials } from '../../auth/credentials-store.ts'
import { startAgent } from '../../agent/start-agent.ts'
import { resolveNodeHome } from '../../node-home.ts'
import { printAgentEvents } from '../utils/print-agent-events.ts'
import { createAgentLog } from '../utils/agent-log.ts'
import { serverUrlProblem } from '../utils/server-url.ts'

interface StartArgs {
  server?: string
  'max-jobs': number
  threads: number | 'auto'
  gpu: boolean
  upstream?: string
  'upstream-model'?: string
  json: boolean
}

export const startCommand: CommandModule<object, StartArgs> = {
  command: 'start',
  describe: 'Connect to the coordinator and serve models until interrupted',
  builder: (y) =>
    y
      .option('server', {
        type: 'string',
        describe: 'Coordinator URL (default: the one logged in to)',
      })
      .option('max-jobs', { type: 'number', default: 1, describe: 'Jobs run at the same time' })
      .option('threads', {
        type: 'string',
        default: 'auto',
        describe: "llama.cpp threads per model, or 'auto' (1 for small models)",
        coerce: (v: string): number | 'auto' => {
          if (v === 'auto') return v
          const n = Number(v)
          if (!Number.isInteger(n) || n < 1)
            throw new Error(`--threads must be 'auto' or a positive integer`)
          return n
        },
      })
      .option('gpu', {
        type: 'boolean',
        default: true,
        describe: 'Use a GPU when one is found (--no-gpu: CPU only)',
      })
      .option('upstream', {
        type: 'string',
        describe: 'Serve through an OpenAI-compatible server at this URL instead of llama.cpp',
      })
      .option('upstream-model', { type: 'string', describe: 'Model name on the upstream server' })
      .option('json', {
        type: 'boolean',
        default: false,
        describe: 'Log one JSON object a line (level from MESHWORK_LOG_LEVEL)',
      })
      .check((a) => {
        if (!Number.isInteger(a['max-jobs']) || a['max-jobs'] < 1) {
          throw new Error('--max-jobs must be a positive integer')
        }
        return true
      }),
  handler: async (args) => {
    const home = resolveNodeHome()
    let creds
    try {
      creds = await readCredentials(home)
    } catch (err) {
      if (!(err instanceof MissingCredentialsError)) throw err
      process.stderr.write(`${err.message}. Run \`meshwork-node login --server URL\` first.\n`)
      process.exitCode = 1
      return
    }
    const server = args.server ?? creds.server
    const problem = serverUrlProblem(server)
    if (problem) {
      process.stderr.write(`${problem}\n`)
      process.exitCode = 1
      return
    }
    const agent = await startAgent({
      server,
      nodeId: creds.node_id,
      credential: creds.credential,
      home,
      maxJobs: args['max-jobs'],
      threads: args.threads,
      gpu: args.gpu ? 'auto' : false,
      upstream: args.upstream ? { url: args.upstream, model: args['upstream-model'] } : undefined,
    })
    printAgentEvents(agent, server, createAgentLog({ json: args.json }))
    // Listeners stay on until the agent has stopped: node-llama-cpp's dependencies use
    // signal-exit, which re-raises a signal nobody else listens to (the process would die
    // mid-shutdown, killed by its own SIGTERM). A second signal ends it at once.
    // SIGTERM drains: no new jobs, running ones finish (up to MESHWORK_NODE_DRAIN_SECONDS, 30 by
    // default), the rest are handed back. SIGINT stops at once.
    let signalled = false
    let drain = false
    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled) process.exit(signal === 'SIGINT' ? 130 : 143)
      signalled = true
      drain = signal === 'SIGTERM'
      stopping()
    }
    let stopping = () => {}
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    await new Promise<void>((resolve) => {
      stopping = resolve
      agent.events.once('unauthorized', ({ status }) => {
        const origin = new URL(server).origin
        process.stderr.write(
          `The coordinator at ${origin} refused this node's credential (HTTP ${status}): the credential was revoked or the node was deleted on My Nodes. ` +
            `Run \`meshwork-node login --server ${origin} --force\` to link this machine again.\n`,
        )
        process.exitCode = 1
        resolve()
      })
      agent.events.once('replaced', () => {
        const origin = new URL(server).origin
        process.stderr.write(
          `Another connection to ${origin} with this node's credential took its place: another machine, or another copy of meshwork-node on this one, is running as this node. Stopped here. ` +
            `Each machine needs its own node: run \`meshwork-node login --server ${origin}\` on the other machine (or \`--force\` here to link this one anew).\n`,
        )
        process.exitCode = 1
        resolve()
      })
    })
    if (drain) {
      const seconds = Number(process.env.MESHWORK_NODE_DRAIN_SECONDS ?? 30)
      await agent.drain(Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 30_000)
    } else await agent.stop()
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  },
}
