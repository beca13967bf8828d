/**
 * @module Real node agents (llama.cpp, one thread) linked to the coordinator through the device
 * flow, and node models driven through the records API the way the web app drives them.
 */
import {
  approveAs,
  linkNode as linkDevice,
  startTestAgent,
  waitUntil,
  type Approver,
  type LinkedNode,
  type TestAgent,
} from '@meshwork/test-kit'
import type { StartAgentOptions } from '../../packages/node/src/index.ts'
import { api, type Coordinator, type TestUser } from './coordinator.ts'

export type { LinkedNode }
export type NodeAgent = TestAgent

/** Links a device; `approve` gets the approve URL and must approve it (API call or browser). */
export function linkNode(
  server: Coordinator,
  deviceName: string,
  approve: Approver,
): Promise<LinkedNode> {
  return linkDevice(server.url, deviceName, approve)
}

/** Links a device, approving through the API as `owner`. */
export function linkNodeByApi(
  server: Coordinator,
  owner: TestUser,
  deviceName: string,
): Promise<LinkedNode> {
  return linkDevice(server.url, deviceName, approveAs(server.url, owner.token))
}

export function runAgent(
  server: Coordinator,
  linked: LinkedNode,
  extra: Partial<StartAgentOptions> = {},
): Promise<TestAgent> {
  return startTestAgent(server.url, linked, extra)
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
