/**
 * Real node agents (llama.cpp through node-llama-cpp) in the test's process, each linked by its
 * owner through the device flow and serving a model: the nodes of the canary and spot-check tests.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type PocketBase from 'pocketbase'
import { startAgent, type InferenceEngine, type RunningAgent } from '@meshwork/node'
import type { TestServer } from '../harness.ts'
import { linkNode, serveModel } from './network.ts'

/** Loading a model and its first measurement may take a while on two shared cores. */
const SERVING_WAIT_MS = 60_000

export class LlamaAgents {
  private agents: RunningAgent[] = []
  private homes: string[] = []

  /** Functions: the server and model are known once the suite's beforeAll has run. */
  constructor(
    private server: () => TestServer,
    private modelId: () => string,
  ) {}

  /** A real agent linked by `owner`, serving the model (1 thread unless told otherwise). */
  async start(owner: PocketBase, options: { threads?: number; engine?: InferenceEngine } = {}) {
    const server = this.server()
    const { nodeId, credential } = await linkNode(server, owner)
    const home = mkdtempSync(join(tmpdir(), 'meshwork-agent-'))
    this.homes.push(home)
    const agent = await startAgent({
      server: server.url,
      nodeId,
      credential,
      home,
      gpu: false,
      threads: options.threads ?? 1,
      engine: options.engine,
      heartbeatIntervalMs: 1000,
    })
    this.agents.push(agent)
    await this.serve(owner, nodeId)
    return { nodeId, agent }
  }

  /** The owner asks the node for the model (as the web app does) and it comes to serve it. */
  serve(owner: PocketBase, nodeId: string): Promise<string> {
    return serveModel(this.server(), owner, nodeId, this.modelId(), SERVING_WAIT_MS)
  }

  async stop(): Promise<void> {
    for (const a of this.agents) await a.stop()
    for (const h of this.homes) rmSync(h, { recursive: true, force: true })
  }
}
