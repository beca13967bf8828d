/**
 * @module Real node agents (llama.cpp, one thread) linked to the coordinator through the device
 * flow, and node models driven through the records API the way the web app drives them.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  linkDevice,
  startAgent,
  type RunningAgent,
  type StartAgentOptions,
} from '../../packages/node/src/index.ts'
import { api, waitUntil, type Coordinator, type TestUser } from './coordinator.ts'

export interface LinkedNode {
  nodeId: string
  credential: string
}

/** Links a device; `approve` gets the approve URL and must approve it (API call or browser). */
export function linkNode(
  server: Coordinator,
  deviceName: string,
  approve: (url: string) => void | Promise<void>,
): Promise<LinkedNode> {
  return linkDevice({ server: server.url, deviceName, onApproveUrl: (url) => void approve(url) })
}

/** Links a device, approving through the API as `owner`. */
export function linkNodeByApi(
  server: Coordinator,
  owner: TestUser,
  deviceName: string,
): Promise<LinkedNode> {
  return linkNode(server, deviceName, async (url) => {
    const token = new URL(url).searchParams.get('token')
    await api(
      server,
      'POST',
      '/api/auth/complete-flow',
      { state_token: token, user_info: {} },
      owner.token,
    )
  })
}

export interface NodeAgent {
  agent: RunningAgent
  stop(): Promise<void>
}

export async function runAgent(
  server: Coordinator,
  linked: LinkedNode,
  extra: Partial<StartAgentOptions> = {},
): Promise<NodeAgent> {
  const home = mkdtempSync(join(tmpdir(), 'meshwork-e2e-node-'))
  const agent = await startAgent({
    server: server.url,
    nodeId: linked.nodeId,
    credential: linked.credential,
    home,
    threads: 1,
    gpu: false,
    heartbeatIntervalMs: 1000,
    progressIntervalMs: 20,
    ...extra,
  })
  return {
    agent,
    async stop() {
      await agent.stop()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

interface NodeModelRow {
  id: string
  is_downloaded: boolean
  is_serving: boolean
}

/** Asks the node to download and then serve `model`, as the owner; waits until it serves. */
export async function serveModel(
  server: Coordinator,
  owner: TestUser,
  nodeId: string,
  model: string,
) {
  const nm = await api<NodeModelRow>(
    server,
    'POST',
    '/api/collections/node_models/records',
    {
      node: nodeId,
      model,
      requested_download: true,
      requested_serving: false,
      is_downloaded: false,
      is_serving: false,
      tokens_per_second: 0,
    },
    owner.token,
  )
  const get = () =>
    api<NodeModelRow>(
      server,
      'GET',
      `/api/collections/node_models/records/${nm.id}`,
      undefined,
      owner.token,
    )
  await waitUntil(async () => (await get()).is_downloaded, 30_000, 'model downloaded')
  await api(
    server,
    'PATCH',
    `/api/collections/node_models/records/${nm.id}`,
    { requested_serving: true },
    owner.token,
  )
  await waitUntil(async () => (await get()).is_serving, 30_000, 'model serving')
  return nm.id
}
