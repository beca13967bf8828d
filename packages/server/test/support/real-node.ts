/**
 * @module A real node for tests: an @meshwork/node agent (llama.cpp, threads 1) linked through the
 * device flow, downloading from the coordinator's mirror (../shared/models) and serving models.
 */
import type PocketBase from 'pocketbase'
import type { InferenceEngine, RunningAgent } from '@meshwork/node'
import { approveAs, linkNode, startTestAgent, waitUntil } from '@meshwork/test-kit'
import type { TestServer } from '../harness.ts'

export { modelMirror, requireTestModels } from '@meshwork/test-kit'

export interface RealNode {
  agent: RunningAgent
  nodeId: string
  stop(): Promise<void>
}

/**
 * Links a device owned by `owner`, starts its agent and waits until it serves every model. An
 * `engine` given (e.g. holding-engine.ts) is the node's, and is disposed when it stops.
 */
export async function startRealNode(
  server: TestServer,
  owner: PocketBase,
  device: string,
  models: string[],
  engine?: InferenceEngine,
): Promise<RealNode> {
  const linked = await linkNode(server.url, device, approveAs(server.url, owner.authStore.token))
  const node = await startTestAgent(server.url, linked, engine ? { engine } : {})
  for (const model of models) {
    const nm = await owner.collection('node_models').create({
      node: linked.nodeId,
      model,
      requested_download: true,
      requested_serving: true,
    })
    await waitUntil(
      async () => (await owner.collection('node_models').getOne(nm.id)).is_serving,
      60_000,
      `serving ${model}`,
    )
  }
  return {
    agent: node.agent,
    nodeId: linked.nodeId,
    async stop() {
      await node.stop()
      await engine?.dispose()
    },
  }
}
