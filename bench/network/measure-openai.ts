/**
 * @module The `/v1` path: a streamed chat completion with an API key (what an `openai` client
 * does), read as raw server-sent events and timestamped on arrival.
 */
import type { GenerationSample } from './measure-direct.ts'

export interface OpenAiPath {
  generate(): Promise<GenerationSample & { chunks: number }>
}

export function openOpenAiPath(
  url: string,
  key: string,
  model: string,
  prompt: string,
  temperature: number,
  maxTokens: number,
): OpenAiPath {
  return {
    async generate() {
      const start = performance.now()
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          messages: [{ role: 'user', content: prompt }],
          temperature,
          max_tokens: maxTokens,
          stream: true,
          stream_options: { include_usage: true },
        }),
      })
      if (!res.ok || !res.body)
        throw new Error(`/v1/chat/completions: ${res.status} ${await res.text()}`)
      let first = 0
      let last = 0
      let chunks = 0
      let usage = { prompt_tokens: 0, completion_tokens: 0 }
      let buffer = ''
      const decoder = new TextDecoder()
      for await (const bytes of res.body) {
        const at = performance.now()
        buffer += decoder.decode(bytes, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const data = event.replace(/^data: /, '')
          if (data === '[DONE]') continue
          const chunk = JSON.parse(data) as {
            choices: { delta: { content?: string } }[]
            usage?: typeof usage | null
          }
          if (chunk.choices[0]?.delta.content) {
            first ||= at
            last = at
            chunks++
          }
          if (chunk.usage) usage = chunk.usage
        }
      }
      const done = performance.now()
      const tokensOutput = usage.completion_tokens
      return {
        ttft: first - start,
        tps: tokensOutput / ((done - start) / 1000),
        streamTps: (tokensOutput - 1) / ((last - first) / 1000),
        tokensInput: usage.prompt_tokens,
        tokensOutput,
        chunks,
      }
    },
  }
}
