/**
 * @module A real node for tests: an @meshwork/node agent (llama.cpp, threads 1) linked through the
 * device flow, downloading from the coordinator's mirror (../shared/models) and serving models.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type PocketBase from 'pocketbase'
import { linkDevice, startAgent, type InferenceEngine, type RunningAgent } from '@meshwork/node'
import type { TestServer } from '../harness.ts'
import { postJson, waitUntil } from './network.ts'

export const modelMirror = fileURLToPath(new URL('../../../../../shared/models/', import.meta.url))

export function requireTestModels(): void {
  if (!existsSync(join(modelMirror, 'stories260K.gguf')))
    throw new Error(`The test models are missing from ${modelMirror}`)
}

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
  const linked = await linkDevice({
    server: server.url,
    deviceName: device,
    onApproveUrl: (url) => {
      const token = new URL(url).searchParams.get('token')!
      void postJson(
        server,
        '/api/auth/complete-flow',
        { state_token: token, user_info: {} },
        owner.authStore.token,
      )
    },
  })
  const home = mkdtempSync(join(tmpdir(), 'meshwork-node-'))
  const agent = await startAgent({
    server: server.url,
    nodeId: linked.nodeId,
    credential: linked.credential,
    home,
    threads: 1,
    gpu: false,
    heartbeatIntervalMs: 1000,
    ...(engine ? { engine } : {}),
  })
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
    agent,
    nodeId: linked.nodeId,
    async stop() {
      await agent.stop()
      await engine?.dispose()
      rmSync(home, { recursive: true, force: true })
    },
  }
}
