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

/** Oldest turns are dropped (a leading system message last) until prompt and answer fit. */
export function plainPrompt(
  model: LlamaModel,
  contextSize: number,
  messages: ChatMessage[],
  sampling: Sampling,
): PlainPrompt {
  const window = Math.min(contextSize, sampling.context_length)
  // Keep room for at least a short answer even when the prompt is long.
  const answerRoom = Math.min(sampling.max_tokens, Math.floor(window / 2))
  let kept = messages
  let tokens = model.tokenize(plainTranscript(kept))
  while (tokens.length + answerRoom > window && kept.length > 1) {
    const dropAt = kept[0].role === 'system' && kept.length > 2 ? 1 : 0
    kept = kept.filter((_, i) => i !== dropAt)
    tokens = model.tokenize(plainTranscript(kept))
  }
  if (tokens.length + answerRoom > window)
    tokens = tokens.slice(tokens.length - (window - answerRoom))
  const maxTokens = Math.max(1, Math.min(sampling.max_tokens, window - tokens.length - 1))
  return { tokens, maxTokens }
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
