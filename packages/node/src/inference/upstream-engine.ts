/**
 * @module upstream-engine
 * An upstream OpenAI-compatible server (Ollama, llama-server, vLLM): POST /v1/chat/completions with
 * `stream: true`, read as server-sent events.
 */
import {
  GenerationAbortedError,
  GenerationError,
  ModelLoadError,
  type GenerationOptions,
  type GenerationRequest,
  type GenerationResult,
  type InferenceEngine,
  type LoadedModel,
} from './inference-engine.ts'
import { readServerSentEvents } from './read-server-sent-events.ts'

export interface UpstreamEngineOptions {
  /** Base URL, e.g. http://127.0.0.1:11434 (Ollama) or http://127.0.0.1:8080 (llama-server). */
  url: string
  /** Upstream model name to use for every catalogue model; default: the catalogue model's name. */
  model?: string
  /** Sent as `Authorization: Bearer <apiKey>` when set. */
  apiKey?: string
}

interface StreamChunk {
  choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[]
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null
}

/** Creates the engine. Loading checks the server answers; the server owns the model's memory. */
export function createUpstreamEngine(options: UpstreamEngineOptions): InferenceEngine {
  const base = options.url.replace(/\/+$/, '')
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`

  return {
    info: { kind: 'openai', version: null, backend: 'upstream' },
    needsModelFile: false,
    async load(ref, signal): Promise<LoadedModel> {
      const res = await fetch(`${base}/v1/models`, { headers, signal }).catch((err: unknown) => {
        throw new ModelLoadError(`Upstream server ${base} is unreachable`, { cause: err })
      })
      await res.body?.cancel()
      if (!res.ok) throw new ModelLoadError(`Upstream server ${base} answered ${res.status}`)
      return {
        ref,
        generate: (request, genOptions) =>
          generateUpstream(base, headers, options.model ?? ref.name, request, genOptions),
        unload: async () => {},
      }
    },
    describeGpu: async () => null,
    // The upstream server's hardware is out of sight: its answers can only be judged as 'upstream'.
    describe: async () => ({ kind: 'openai', version: null, backend: 'upstream' }),
    dispose: async () => {},
  }
}

async function generateUpstream(
  base: string,
  headers: Record<string, string>,
  model: string,
  { messages, sampling }: GenerationRequest,
  { signal, onText }: GenerationOptions,
): Promise<GenerationResult> {
  const body = {
    model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    temperature: sampling.temperature,
    top_p: sampling.top_p,
    top_k: sampling.top_k,
    repeat_penalty: sampling.repeat_penalty,
    frequency_penalty: sampling.frequency_penalty,
    presence_penalty: sampling.presence_penalty,
    max_tokens: sampling.max_tokens,
    ...(sampling.stop?.length ? { stop: sampling.stop } : {}),
    ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
  }
  let chunks = 0
  let usage: StreamChunk['usage'] = null
  let finish: string | null = null
  try {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal,
    })
    if (!res.ok || !res.body) {
      const detail = (await res.text().catch(() => '')).slice(0, 200)
      throw new GenerationError(`Upstream server answered ${res.status}: ${detail}`)
    }
    for await (const data of readServerSentEvents(res.body)) {
      if (data === '[DONE]') break
      const chunk = JSON.parse(data) as StreamChunk
      if (chunk.usage) usage = chunk.usage
      const choice = chunk.choices?.[0]
      if (choice?.finish_reason) finish = choice.finish_reason
      const text = choice?.delta?.content
      if (text) {
        chunks++
        onText(text)
      }
    }
  } catch (err) {
    if (signal?.aborted) throw new GenerationAbortedError({ cause: err })
    if (err instanceof GenerationError) throw err
    throw new GenerationError(`Upstream generation failed: ${String(err)}`, { cause: err })
  }
  return {
    // Servers that omit usage get an estimate: one token per streamed chunk, four chars per token.
    tokensInput:
      usage?.prompt_tokens ?? Math.ceil(messages.reduce((n, m) => n + m.content.length, 0) / 4),
    tokensOutput: usage?.completion_tokens ?? chunks,
    stopReason: finish === 'length' ? 'length' : 'stop',
  }
}
