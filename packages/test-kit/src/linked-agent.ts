/**
 * @module Real node agents (@meshwork/node, llama.cpp on one thread) linked to a coordinator
 * through the device flow, as `meshwork-node login` and `start` do, in a throw-away home folder.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { linkDevice, startAgent, type RunningAgent, type StartAgentOptions } from '@meshwork/node'

export interface LinkedNode {
  nodeId: string
  credential: string
}

/** What the owner does with the approve URL: open it in a browser, or call the API. */
export type Approver = (approveUrl: string) => void | Promise<void>

/** Approves (or denies) through the API as the owner, as the Approve Connection page does. */
export function approveAs(
  serverUrl: string,
  ownerToken: string,
  decision: 'approve' | 'deny' = 'approve',
): Approver {
  return async (approveUrl) => {
    const token = new URL(approveUrl).searchParams.get('token')
    const body =
      decision === 'approve'
        ? { state_token: token, user_info: {} }
        : { state_token: token, status: 'failed', error: 'User denied authorization' }
    await fetch(new URL('/api/auth/complete-flow', serverUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: ownerToken },
      body: JSON.stringify(body),
    })
  }
}

/** Runs the device flow; resolves with the credential once `approve` has approved. */
export function linkNode(
  serverUrl: string,
  deviceName: string,
  approve: Approver,
): Promise<LinkedNode> {
  return linkDevice({
    server: serverUrl,
    deviceName,
    onApproveUrl: (url) => void Promise.resolve(approve(url)).catch(() => {}),
  })
}

export interface TestAgent {
  agent: RunningAgent
  nodeId: string
  home: string
  /** Stops the agent and removes its home folder. */
  stop(): Promise<void>
}

/** Starts the agent of a linked node: one thread, no GPU, heartbeats every second. */
export async function startTestAgent(
  serverUrl: string,
  linked: LinkedNode,
  extra: Partial<StartAgentOptions> = {},
): Promise<TestAgent> {
  const home = mkdtempSync(join(tmpdir(), 'meshwork-node-'))
  const agent = await startAgent({
    server: serverUrl,
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
    nodeId: linked.nodeId,
    home,
    async stop() {
      await agent.stop()
      rmSync(home, { recursive: true, force: true })
    },
  }
}
