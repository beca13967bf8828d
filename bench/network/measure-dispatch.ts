/**
 * @module Dispatch with many simulated nodes: send -> job_offer at a node, one send at a time and
 * then many in flight, and how many requests per second complete.
 */
import { Changes, WAIT_MS, api, subscribe } from './network-client.ts'
import type { SimulatedNodes } from './simulated-nodes.ts'

/** Each in ms from the start of one send. */
export interface DispatchSample {
  /** The send's HTTP answer. */
  answered: number
  /** The job_offer reaching a node. */
  offered: number
  /** The completed event reaching the subscriber. */
  completed: number
}

export interface DispatchFigures {
  /** One send at a time. */
  sequential: DispatchSample[]
  /** With `concurrency` sends in flight. */
  concurrent: DispatchSample[]
  /** Completed requests per second with `concurrency` sends in flight. */
  requestsPerSecond: number
  /** The coordinator's CPU time (all threads) per request with `concurrency` sends in flight, ms. */
  cpuPerRequestMs: number
}

export async function measureDispatch(
  url: string,
  user: { id: string; token: string },
  modelId: string,
  sims: SimulatedNodes,
  sends: number,
  concurrency: number,
  /** Sends of the one-at-a-time phase. */
  sequentialSends: number,
  /** The in-flight senders start spread over this many ms (0: all at once). */
  staggerMs: number,
  /** The coordinator's CPU time so far, seconds. */
  coordinatorCpu: () => number,
): Promise<DispatchFigures> {
  const completed = new Set<string>()
  const changes = new Changes()
  const stop = await subscribe(url, user.token, 'requests/*', (data) => {
    const { record } = JSON.parse(data) as { record: { id: string; status: string } }
    if (record.status === 'completed') completed.add(record.id)
    changes.notify()
  })
  // Conversations exist beforehand: only the send is timed.
  const conversations: string[] = []
  for (let i = 0; i < sequentialSends + sends; i++) {
    const c = (await api(
      url,
      '/api/collections/conversations/records',
      { title: 'dispatch', user: user.id },
      user.token,
    )) as { id: string }
    conversations.push(c.id)
  }
  const sendOne = async (conversation: string): Promise<DispatchSample> => {
    const start = performance.now()
    const sent = (await api(
      url,
      '/api/chat/send',
      { conversation_id: conversation, model_id: modelId, prompt: 'hi', temperature: 0 },
      user.token,
    )) as { request_id: string }
    const answered = performance.now() - start
    const offered = (await sims.offered(sent.request_id)) - start
    await changes.until(() => completed.has(sent.request_id), WAIT_MS)
    return { answered, offered, completed: performance.now() - start }
  }
  try {
    const sequential: DispatchSample[] = []
    for (let i = 0; i < sequentialSends; i++) sequential.push(await sendOne(conversations[i]))

    // The client's connections are open before the phase starts, so the phase times sends, not
    // TCP connection set-up (on this shared machine a new connection is now and then refused and
    // tried again a second or more later: Tcp:AttemptFails in /proc/net/snmp).
    await Promise.all(Array.from({ length: concurrency }, () => fetch(url + '/api/health')))
    const concurrent: DispatchSample[] = []
    const queue = conversations.slice(sequentialSends)
    const start = performance.now()
    const cpuBefore = coordinatorCpu()
    await Promise.all(
      Array.from({ length: concurrency }, async (_, i) => {
        if (staggerMs > 0) await new Promise((r) => setTimeout(r, (i * staggerMs) / concurrency))
        for (let c = queue.shift(); c; c = queue.shift()) concurrent.push(await sendOne(c))
      }),
    )
    const requestsPerSecond = sends / ((performance.now() - start) / 1000)
    const cpuPerRequestMs = ((coordinatorCpu() - cpuBefore) * 1000) / sends
    return { sequential, concurrent, requestsPerSecond, cpuPerRequestMs }
  } finally {
    stop()
  }
}
