/**
 * @module Input tokens of a prompt, counted as answers are (answer-meter.ts): with the model's
 * tokenizer when the coordinator has it, else from the text's length. The tokenizer runs on the
 * event loop, and llama.cpp's tokenizers take more than linear time on long runs of rare
 * characters (32,000 CJK characters, within a prompt's limit, took 0.8 s in one call). So a long
 * text is counted in pieces of at most PIECE_CHARS characters, cut at a space where there is one,
 * and other work runs between pieces.
 */
import type { MeterRule } from './answer-meter.ts'
import { tokensBound } from './answer-meter.ts'
import type { ModelTokenizer } from './model-tokenizer.ts'

/**
 * The most characters tokenized in one call: a few milliseconds of the event loop at worst (CJK or
 * emoji on this project's 2-core machine), and short enough that no run is long.
 */
export const PIECE_CHARS = 1000

/**
 * Input tokens of a prompt's messages: the tokenizer's count of their text, or without one the
 * smaller of the spec's estimate (characters / 4) and the byte bound.
 */
export async function countInput(contents: string[], rule: MeterRule): Promise<number> {
  const tokenizer = rule.tokenizer
  if (tokenizer) {
    let n = 0
    for (const text of contents) if (text) n += await countTokens(tokenizer, text)
    return n
  }
  const chars = contents.reduce((n, c) => n + c.length, 0)
  const bytes = contents.reduce((n, c) => n + Buffer.byteLength(c), 0)
  return Math.min(Math.floor(chars / 4), tokensBound(bytes, rule.bytes))
}

/**
 * Token counts of texts already counted, per tokenizer. Every send counts the conversation's whole
 * history (up to the context window, tens of kB); the earlier turns are the same texts each time,
 * so each is tokenized once. Bounded by the characters kept; the least recently used go first.
 * Short texts are cheaper to count than to keep.
 */
const countedTexts = new WeakMap<ModelTokenizer, { texts: Map<string, number>; chars: number }>()
const COUNT_CACHE_CHARS = 4_000_000
const COUNT_CACHE_MIN_CHARS = 256

async function countTokens(tokenizer: ModelTokenizer, text: string): Promise<number> {
  if (text.length < COUNT_CACHE_MIN_CHARS) return tokenizer.tokenize(text).length
  let cache = countedTexts.get(tokenizer)
  if (!cache) countedTexts.set(tokenizer, (cache = { texts: new Map(), chars: 0 }))
  const known = cache.texts.get(text)
  if (known !== undefined) {
    // Most recently used last (a Map iterates in insertion order).
    cache.texts.delete(text)
    cache.texts.set(text, known)
    return known
  }
  const count =
    text.length <= PIECE_CHARS
      ? tokenizer.tokenize(text).length
      : await countInPieces(tokenizer, text)
  cache.texts.set(text, count)
  cache.chars += text.length
  for (const [oldest] of cache.texts) {
    if (cache.chars <= COUNT_CACHE_CHARS) break
    cache.texts.delete(oldest)
    cache.chars -= oldest.length
  }
  return count
}

/**
 * The text's tokens, piece by piece, yielding to the event loop between pieces. A cut at a space
 * counts exactly what the whole text does for the tokenizers measured (llama.cpp's SentencePiece
 * ones treat a space as the start of the next word, which a new piece's own leading space stands
 * for: the space is left out; for one where it is not, kept). A piece with no space in its second
 * half is cut where it ends, which can count one token more than the whole text there.
 */
async function countInPieces(tokenizer: ModelTokenizer, text: string): Promise<number> {
  const dropSpace = spaceStartsPiece(tokenizer)
  let n = 0
  let start = 0
  while (start < text.length) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve))
    let end = Math.min(text.length, start + PIECE_CHARS)
    let next = end
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end)
      if (space > start + PIECE_CHARS / 2) {
        end = space
        next = dropSpace ? space + 1 : space
      } else if (isLowSurrogate(text.charCodeAt(end))) {
        // Never between the two halves of one character.
        end--
        next = end
      }
    }
    n += tokenizer.tokenize(text.slice(start, end)).length
    start = next
  }
  return n
}

const spaceHandling = new WeakMap<ModelTokenizer, boolean>()
const SAMPLE = ['The quick brown fox', 'jumps over the lazy dog']

/** Whether a piece cut at a space counts as the whole text does with that space left out. */
function spaceStartsPiece(tokenizer: ModelTokenizer): boolean {
  let drop = spaceHandling.get(tokenizer)
  if (drop === undefined) {
    const whole = tokenizer.tokenize(SAMPLE.join(' ')).length
    const left = tokenizer.tokenize(SAMPLE[0]).length
    const kept = left + tokenizer.tokenize(` ${SAMPLE[1]}`).length
    drop = kept !== whole
    spaceHandling.set(tokenizer, drop)
  }
  return drop
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff
}
