/**
 * @module The prompt a node receives: the conversation's earlier completed turns plus the new
 * message, with the oldest turns dropped until the estimate fits the context window.
 */
import type { ChatMessage } from '@meshwork/protocol'
import { CHARS_PER_TOKEN, estimateTokens } from '@meshwork/protocol'

/** The estimate of a whole prompt: its characters together, one token per 4. */
export function estimateMessages(messages: ChatMessage[]): number {
  return Math.floor(messages.reduce((chars, m) => chars + m.content.length, 0) / CHARS_PER_TOKEN)
}

export interface Turn {
  prompt: string
  response: string
}

export interface BuiltPrompt {
  messages: ChatMessage[]
  /** Estimated input tokens of all messages together. */
  estimatedInput: number
}

/**
 * `history` oldest first; keeps the newest turns that fit `contextLength - reserveOutput`.
 * `count` counts the input tokens of the messages kept (the coordinator's own count; by default
 * the spec's estimate).
 */
export async function buildPrompt(
  history: Turn[],
  message: string,
  contextLength: number,
  reserveOutput: number,
  count: (contents: string[]) => number | Promise<number> = (c) => estimateTokens(c.join('')),
): Promise<BuiltPrompt> {
  const budget = Math.max(0, contextLength - reserveOutput)
  const tail: ChatMessage[] = [{ role: 'user', content: message }]
  let chars = message.length
  for (let i = history.length - 1; i >= 0; i--) {
    const turn = history[i]
    const turnChars = turn.prompt.length + turn.response.length
    if (Math.floor((chars + turnChars) / CHARS_PER_TOKEN) > budget) break
    tail.unshift(
      { role: 'user', content: turn.prompt },
      { role: 'assistant', content: turn.response },
    )
    chars += turnChars
  }
  return { messages: tail, estimatedInput: await count(tail.map((m) => m.content)) }
}
