/**
 * @module One node agent as a real process of its own (the @meshwork/node agent, its socket through
 * the load balancer, reconnecting by itself), serving by name with a simulated engine so that many
 * can run on a small machine: it streams "word0 word1 ..." one word every SIM_TOKEN_MS.
 * SIGTERM drains like `meshwork-node start`.
 * Environment: SERVER, NODE_ID, NODE_CREDENTIAL, NODE_HOME, SIM_TOKEN_MS, SIM_TOKENS.
 */
import { GenerationAbortedError, startAgent, type InferenceEngine } from '@meshwork/node'

const tokenMs = Number(process.env.SIM_TOKEN_MS ?? 50)
const tokens = Number(process.env.SIM_TOKENS ?? 20)
const info = { kind: 'llama.cpp' as const, version: 'simulated', backend: 'cpu-simulated' }

const engine: InferenceEngine = {
  info,
  needsModelFile: false,
  async load(ref) {
    return {
      ref,
      async generate(request, options) {
        const n = Math.max(1, Math.min(tokens, request.sampling.max_tokens))
        for (let i = 0; i < n; i++) {
          await new Promise((r) => setTimeout(r, tokenMs))
          if (options.signal?.aborted) throw new GenerationAbortedError()
          options.onText(`${i ? ' ' : ''}word${i}`)
        }
        return { tokensInput: 10, tokensOutput: n, stopReason: 'length' as const }
      },
      async unload() {},
    }
  },
  describeGpu: async () => null,
  describe: async () => info,
  dispose: async () => {},
}

const agent = await startAgent({
  server: process.env.SERVER!,
  nodeId: process.env.NODE_ID!,
  credential: process.env.NODE_CREDENTIAL!,
  home: process.env.NODE_HOME!,
  engine,
  maxJobs: Number(process.env.MAX_JOBS ?? 2),
  heartbeatIntervalMs: 1000,
  initialBackoffMs: 100,
  maxBackoffMs: 1000,
})
agent.events.on('connected', () => process.send?.({ type: 'connected' }))
process.send?.({ type: 'ready' })
let stopping = false
process.on('SIGTERM', () => {
  if (stopping) return
  stopping = true
  agent
    .drain(Number(process.env.MESHWORK_NODE_DRAIN_SECONDS ?? 30) * 1000)
    .catch((err: unknown) => console.error('drain failed:', err))
    .finally(() => process.exit(0))
})
