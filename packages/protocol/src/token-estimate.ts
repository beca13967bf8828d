/**
 * @module The input token estimate before a model's tokenizer has counted (spec: one token per 4
 * characters, rounded down): the composer's "~N input tokens", the credit hold a send sizes, and
 * the history that fits a model's context all use this one rule.
 */
export const CHARS_PER_TOKEN = 4

export function estimateTokens(text: string): number {
  return Math.floor(text.length / CHARS_PER_TOKEN)
}
