/**
 * @module llama-prompt
 * The tokens a plain-transcript job starts from, shared by generation and by a reference node's
 * scoring: a reference must replay exactly the context the judged node generated from.
 */
import type { ChatHistoryItem, ChatWrapper, LlamaModel, Token } from 'node-llama-cpp'
import type { ChatMessage, Sampling } from '@meshwork/protocol'
import { plainTranscript } from './plain-transcript.ts'

export interface PlainPrompt {
  /** The transcript's tokens (without the beginning-of-sequence token the completion adds). */
  tokens: Token[]
  /** Output tokens the job may generate in this window. */
  maxTokens: number
}

/**
 * Oldest turns are dropped (a leading system message last) until prompt and answer fit. Each
 * drop only shortens the transcript, so the fewest drops that fit are found by halving: a job of
 * thousands of messages tokenizes a few dozen transcripts, not one per message (tokenizing blocks
 * the event loop, and a prompt from the coordinator may hold any number of messages).
 */
export function plainPrompt(
  model: LlamaModel,
  contextSize: number,
  messages: ChatMessage[],
  sampling: Sampling,
): PlainPrompt {
  const window = Math.min(contextSize, sampling.context_length)
  // Keep room for at least a short answer even when the prompt is long.
  const answerRoom = Math.min(sampling.max_tokens, Math.floor(window / 2))
  const tokenized = new Map<number, Token[]>()
  const tokensAfter = (drops: number) => {
    let t = tokenized.get(drops)
    if (!t) tokenized.set(drops, (t = model.tokenize(plainTranscript(afterDrops(messages, drops)))))
    return t
  }
  const fits = (drops: number) => tokensAfter(drops).length + answerRoom <= window
  // Drops go up to one message left, which is kept (and cut) whether it fits or not.
  let lo = 0
  let hi = messages.length - 1
  if (fits(0)) hi = 0
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (fits(mid)) hi = mid
    else lo = mid + 1
  }
  let tokens = tokensAfter(lo)
  if (tokens.length + answerRoom > window)
    tokens = tokens.slice(tokens.length - (window - answerRoom))
  const maxTokens = Math.max(1, Math.min(sampling.max_tokens, window - tokens.length - 1))
  return { tokens, maxTokens }
}

/**
 * The messages left after `drops` drops, one at a time: the oldest turn, or the turn after a
 * leading system message while more than that message and one turn are left.
 */
function afterDrops(messages: ChatMessage[], drops: number): ChatMessage[] {
  // What is left: an optional system message at `head`, then messages[start..].
  let head = -1
  let start = 0
  for (let i = 0; i < drops; i++) {
    const left = (head >= 0 ? 1 : 0) + messages.length - start
    if (left <= 1) break
    const first = head >= 0 ? head : start
    if (messages[first].role === 'system' && left > 2) {
      if (head >= 0) start++
      else {
        head = start
        start += 2
      }
    } else if (head >= 0) head = -1
    else start++
  }
  const rest = messages.slice(start)
  return head >= 0 ? [messages[head], ...rest] : rest
}

/**
 * The token LlamaCompletion puts before its input (node-llama-cpp's own rule: none for RWKV and
 * UGM vocabularies, BOS for WPM, otherwise BOS when the model asks for it).
 */
export function beginningToken(model: LlamaModel): Token | null {
  const type = String(model.vocabularyType)
  if (type === 'rwkv' || type === 'ugm') return null
  if (type === 'wpm') return model.tokens.bos
  return model.tokens.shouldPrependBosToken ? model.tokens.bos : null
}

/** Sampling options node-llama-cpp takes, from the protocol's; generation and scoring share them. */
export function samplingOptions(s: Sampling) {
  return {
    temperature: s.temperature,
    topP: s.top_p,
    topK: s.top_k,
    ...(s.seed !== undefined ? { seed: s.seed } : {}),
    repeatPenalty: {
      penalty: s.repeat_penalty,
      frequencyPenalty: s.frequency_penalty || undefined,
      presencePenalty: s.presence_penalty || undefined,
    },
  }
}

/**
 * The chat wrapper that renders a model's own chat template (`tokenizer.chat_template` in the
 * GGUF): node-llama-cpp's specialised wrapper when the template is one it knows, otherwise the
 * template itself through its Jinja renderer.
 */
export async function modelChatWrapper(model: LlamaModel): Promise<ChatWrapper> {
  const { resolveChatWrapper } = await import('node-llama-cpp')
  return resolveChatWrapper(model)
}

/** A job's messages as node-llama-cpp's chat history, ending in the model turn to complete. */
export function toChatHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = messages.map((m) =>
    m.role === 'system'
      ? { type: 'system', text: m.content }
      : m.role === 'user'
        ? { type: 'user', text: m.content }
        : { type: 'model', response: [m.content] },
  )
  // An empty model turn at the end is the one LlamaChat completes.
  history.push({ type: 'model', response: [] })
  return history
}

/** The text a chat-template job starts from, as the wrapper renders it (for logs and tests). */
export function chatTemplateText(wrapper: ChatWrapper, messages: ChatMessage[]): string {
  return wrapper
    .generateContextState({ chatHistory: toChatHistory(messages) })
    .contextText.toString()
}
