/**
 * @module The body of `POST /v1/chat/completions`, checked with zod and turned into what the chat
 * pipeline takes: messages, sampling overrides and the output cap. Fields OpenAI has and Meshwork
 * does not use (user, logit_bias, ...) are ignored; ones that would change the answer's shape
 * (n > 1, tools, images) are refused rather than silently dropped.
 */
import type { ChatMessage } from '@meshwork/protocol'
import { z } from 'zod'
import { invalidBody } from './openai-error.ts'

const textPart = z.object({ type: z.literal('text'), text: z.string() })
const content = z.union([z.string(), z.array(textPart)])

const message = z.object({
  // `developer` is what newer clients send in place of `system`.
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content,
  name: z.string().optional(),
})

const int = z.number().int()
const bodySchema = z.object({
  model: z.string().min(1).max(200),
  messages: z.array(message).min(1).max(1000),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: int.min(1).nullish(),
  max_completion_tokens: int.min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  stop: z.union([z.string().min(1).max(100), z.array(z.string().min(1).max(100)).max(4)]).nullish(),
  seed: int.min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).nullish(),
  n: z.literal(1).nullish(),
})

export interface CompletionRequest {
  model: string
  messages: ChatMessage[]
  stream: boolean
  includeUsage: boolean
  /** The client's output cap, if it set one. */
  maxTokens: number | null
  temperature: number | null
  topP: number | null
  frequencyPenalty: number | null
  presencePenalty: number | null
  stop: string[]
  /** Folded into llama.cpp's 32-bit seed range. */
  seed: number | null
}

const unsupported: Record<string, string> = {
  tools: 'Tool calls are not supported.',
  tool_choice: 'Tool calls are not supported.',
  functions: 'Function calls are not supported.',
  function_call: 'Function calls are not supported.',
  logprobs: 'logprobs are not supported.',
  response_format: 'response_format is not supported.',
}

export function parseCompletionRequest(body: unknown): CompletionRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidBody('The request body must be a JSON object.')
  }
  for (const [field, message] of Object.entries(unsupported)) {
    const value = (body as Record<string, unknown>)[field]
    if (value !== undefined && value !== null && value !== false) throw invalidBody(message, field)
  }
  const parsed = bodySchema.safeParse(body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const param = issue.path.map(String).join('.') || null
    const where = param ? ` at '${param}'` : ''
    throw invalidBody(`Invalid request body${where}: ${issue.message}`, param)
  }
  const b = parsed.data
  return {
    model: b.model,
    messages: b.messages.map((m) => ({
      role: m.role === 'developer' ? 'system' : m.role,
      content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
    })),
    stream: b.stream ?? false,
    includeUsage: Boolean(b.stream_options?.include_usage),
    maxTokens: b.max_completion_tokens ?? b.max_tokens ?? null,
    temperature: b.temperature ?? null,
    topP: b.top_p ?? null,
    frequencyPenalty: b.frequency_penalty ?? null,
    presencePenalty: b.presence_penalty ?? null,
    stop:
      b.stop === undefined || b.stop === null ? [] : typeof b.stop === 'string' ? [b.stop] : b.stop,
    seed: b.seed === undefined || b.seed === null ? null : ((b.seed % 2 ** 32) + 2 ** 32) % 2 ** 32,
  }
}

/** What the request row stores as its prompt: the last user message, as chat does. */
export function promptOf(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i].role === 'user') return messages[i].content
  return messages.at(-1)?.content ?? ''
}
