/**
 * @module plain-transcript
 * Prompt format for models without a chat template (e.g. stories260K): a plain-text transcript.
 */
import type { ChatMessage } from '@meshwork/protocol'

const ROLE_LABEL = { system: 'System', user: 'User', assistant: 'Assistant' } as const

/** Generation stops when the model starts writing the next user turn. */
export const PLAIN_TRANSCRIPT_STOP = '\nUser:'

/**
 * Renders messages as `User: ...` / `Assistant: ...` lines ending with an open `Assistant:` turn.
 * A leading system message is written as a bare paragraph: tiny models continue prose better
 * than they follow a labelled instruction.
 */
export function plainTranscript(messages: ChatMessage[]): string {
  const lines: string[] = []
  messages.forEach((m, i) => {
    if (m.role === 'system' && i === 0) lines.push(m.content.trim(), '')
    else lines.push(`${ROLE_LABEL[m.role]}: ${m.content.trim()}`)
  })
  lines.push('Assistant:')
  return lines.join('\n')
}
