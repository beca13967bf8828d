/**
 * @module The network path: a chat send through the coordinator, answered by a real node agent,
 * watched by a realtime (SSE) subscriber that timestamps every event on arrival.
 */
import type { GenerationSample } from './measure-direct.ts'
import { Changes, api, subscribe } from './network-client.ts'

interface Seen {
  at: number
  record: Record<string, unknown>
}

/** A network generation, with where its first-token time went. */
export interface NetworkSample extends GenerationSample {
  partials: number
  /** tokens_output / processing_time_ms as the node agent reported them: generation alone. */
  agentTps: number
  /** CPU time the coordinator process spent from the send to the completed event, ms. */
  coordinatorCpu: number
  /** Send -> the HTTP answer of the send, ms. */
  answered: number
  /** Send -> the node agent started the job, ms. */
  started: number
  /** Send -> the first event of the request (the `processing` update), ms. */
  firstEvent: number
}

export interface NetworkPath {
  generate(): Promise<NetworkSample>
  close(): void
}

export async function openNetworkPath(
  url: string,
  user: { id: string; token: string },
  modelId: string,
  prompt: string,
  temperature: number,
  /** When (performance.now) the node agent last started a job. */
  jobStartedAt: () => number,
  /** CPU time used so far by the coordinator process, ms. */
  coordinatorCpu: () => number,
): Promise<NetworkPath> {
  const events: Seen[] = []
  const changes = new Changes()
  const stop = await subscribe(url, user.token, 'requests/*', (data, at) => {
    events.push({ at, record: (JSON.parse(data) as { record: Record<string, unknown> }).record })
    changes.notify()
  })
  return {
    async generate() {
      events.length = 0
      // A fresh conversation each time, so the prompt carries no history.
      const conv = (await api(
        url,
        '/api/collections/conversations/records',
        { title: 'bench', user: user.id },
        user.token,
      )) as { id: string }
      const cpuBefore = coordinatorCpu()
      const start = performance.now()
      const sent = (await api(
        url,
        '/api/chat/send',
        { conversation_id: conv.id, model_id: modelId, prompt, temperature },
        user.token,
      )) as { request_id: string }
      const answered = performance.now() - start
      const mine = () => events.filter((e) => e.record.id === sent.request_id)
      const done = await changes.until(
        () => mine().find((e) => e.record.status === 'completed' && !e.record.is_partial),
        30_000,
      )
      const cpu = coordinatorCpu() - cpuBefore
      const seen = mine()
      const first = seen.find((e) => e.record.response)!
      // The whole text arrives as the last partial event, just before the completed record.
      const whole = seen.find((e) => e.record.response === done.record.response) ?? done
      const tokensOutput = Number(done.record.tokens_output)
      return {
        ttft: first.at - start,
        tps: tokensOutput / ((done.at - start) / 1000),
        streamTps: (tokensOutput - 1) / ((whole.at - first.at) / 1000),
        tokensInput: Number(done.record.tokens_input),
        tokensOutput,
        agentTps: tokensOutput / (Number(done.record.processing_time_ms) / 1000),
        coordinatorCpu: cpu,
        answered,
        started: jobStartedAt() - start,
        firstEvent: seen[0].at - start,
        partials: seen.filter((e) => e.record.is_partial && e.record.response).length,
      }
    },
    close: stop,
  }
}
