/**
 * @module Metering an answer from what the coordinator saw (docs/inference-network.md, "Metering").
 * While a job streams, its text is kept up to a byte cap sized from the output budget (anything
 * past it is dropped, so a node cannot store or show megabytes for a few tokens). At the end the
 * coordinator counts the answer itself: with the model's own tokenizer when it has one (and cuts
 * the stored text at the budget), otherwise with a bound from the text's UTF-8 length and the
 * model's calibrated bytes per token. The node's own count can only lower the bill.
 */
import type { ModelTokenizer } from './model-tokenizer.ts'
import type { ByteRule } from './calibration.ts'

/** What the coordinator counts with for one model. */
export interface MeterRule {
  tokenizer: ModelTokenizer | null
  bytes: ByteRule
}

export interface MeteredAnswer {
  /** The answer as stored and shown: at most `budget` tokens. */
  text: string
  /** Output tokens billed: the coordinator's count, capped by the budget and the node's claim. */
  tokensOutput: number
  /** The tokens a reference scores: the node's ids when they spell the text, else the text's. */
  tokens: number[] | null
  /** The ids the node sent (at most the budget), or null when it sent none. */
  nodeIds: number[] | null
  /** Whether the node's ids spelled its text (null: it sent none, or there was no tokenizer). */
  idsMatch: boolean | null
  /** The coordinator cut the text at the budget (its own count was above it). */
  cut: boolean
}

/** Most bytes an answer of `budget` tokens can take under `rule`. */
export function answerByteCap(budget: number, rule: MeterRule): number {
  const perToken = rule.tokenizer ? rule.tokenizer.maxTokenBytes : rule.bytes.maxBytesPerToken
  return budget * Math.max(1, perToken)
}

/** One job's streamed answer, bounded while it arrives. */
export class AnswerMeter {
  text = ''
  private bytes = 0
  /** The node's token ids; null once a chunk came without them. */
  private ids: number[] | null = []
  /** Set when the node sent more than the budget allows (bytes or ids). */
  overflowed = false
  /** Set when the text reached one of the caller's stop sequences: it ends before it. */
  stopped = false
  private readonly longestStop: number

  /** `stops`: the caller's stop sequences (`/v1`), which the node is asked to end before. */
  constructor(
    readonly budget: number,
    readonly rule: MeterRule,
    private readonly stops: readonly string[] = [],
    private readonly maxBytes = answerByteCap(budget, rule),
  ) {
    this.longestStop = Math.max(0, ...stops.map((s) => s.length))
  }

  /**
   * The text that may be shown while the answer streams: without an end that could still turn
   * out to begin a stop sequence (`"\nObserv"` before `"ation:"` arrives).
   */
  get shown(): string {
    if (this.stopped || this.longestStop === 0) return this.text
    for (let keep = Math.min(this.longestStop - 1, this.text.length); keep > 0; keep--) {
      const end = this.text.slice(-keep)
      if (this.stops.some((s) => s.startsWith(end))) return this.text.slice(0, -keep)
    }
    return this.text
  }

  push(text: string, tokens?: readonly number[]): void {
    // Past a stop sequence nothing counts: not its text, not its ids (an honest agent ends there).
    if (this.stopped) return
    const before = this.text.length
    this.append(text, tokens)
    if (this.longestStop > 0 && this.text.length > before) this.cutAtStop(before)
  }

  /**
   * A node that goes on past the caller's stop sequence (the agent ends before it) would be paid
   * for what follows and show it to a caller that asked never to see it: the text ends before the
   * first stop, and its ids no longer spell it (the text's own tokens are billed and scored, as
   * for an answer cut at the budget).
   */
  private cutAtStop(appendedAt: number): void {
    const from = Math.max(0, appendedAt - this.longestStop + 1)
    let at = -1
    for (const stop of this.stops) {
      const i = this.text.indexOf(stop, from)
      if (i >= 0 && (at < 0 || i < at)) at = i
    }
    if (at < 0) return
    this.text = this.text.slice(0, at)
    this.bytes = Buffer.byteLength(this.text)
    this.ids = null
    this.stopped = true
  }

  private append(text: string, tokens?: readonly number[]): void {
    if (tokens === undefined) this.ids = null
    else if (this.ids) {
      if (this.ids.length + tokens.length > this.budget) this.overflowed = true
      this.ids.push(...tokens.slice(0, Math.max(0, this.budget - this.ids.length)))
    }
    if (!text || this.bytes >= this.maxBytes) {
      if (text) this.overflowed = true
      return
    }
    const size = Buffer.byteLength(text)
    if (this.bytes + size <= this.maxBytes) {
      this.text += text
      this.bytes += size
      return
    }
    this.overflowed = true
    const kept = utf8Prefix(text, this.maxBytes - this.bytes)
    this.text += kept
    this.bytes += Buffer.byteLength(kept)
  }

  /**
   * Counts and cuts the answer; `claimed` is the node's own output count (a hint only), null when
   * the node made no claim (a request deleted mid-answer): then, without a tokenizer, the spec's
   * estimate (characters / 4) stands in for it, as it does for input.
   */
  finish(claimed: number | null): MeteredAnswer {
    const { tokenizer } = this.rule
    if (!tokenizer) {
      const bound = Math.min(this.budget, tokensBound(this.bytes, this.rule.bytes))
      const hint = claimed ?? Math.floor(this.text.length / 4)
      return {
        text: this.text,
        tokensOutput: Math.min(bound, hint),
        tokens: this.ids,
        nodeIds: this.ids,
        idsMatch: null,
        // Without a tokenizer the text is only ever cut by the byte cap, or at a stop sequence.
        cut: this.overflowed || this.stopped,
      }
    }
    const ids = this.ids
    const idsMatch =
      ids === null
        ? null
        : !this.overflowed &&
          ids.every((t) => t < tokenizer.vocabularySize) &&
          tokenizer.detokenize(ids) === this.text
    const canonical = tokenizer.tokenize(this.text)
    if (idsMatch && ids) {
      // The node's own tokens spell its text and are within the budget: the text stands. Billed:
      // the fewer of its tokens and the text's own tokenization (a model can spell a text with
      // more tokens than its tokenizer would, and so could a node padding its count).
      return {
        text: this.text,
        tokensOutput: Math.min(ids.length, canonical.length, claimed ?? Infinity),
        tokens: ids,
        nodeIds: ids,
        idsMatch,
        cut: false,
      }
    }
    // No ids to trust: the text's own tokens count, and the text is cut at the budget.
    const cut = canonical.length > this.budget
    const counted = cut ? canonical.slice(0, this.budget) : canonical
    return {
      text: cut ? tokenizer.detokenize(counted) : this.text,
      tokensOutput: Math.min(counted.length, claimed ?? Infinity),
      tokens: counted,
      nodeIds: ids,
      idsMatch,
      cut: cut || this.stopped,
    }
  }
}

/** Tokens a text of `bytes` UTF-8 bytes can hold at most by the rule: never more than its bytes. */
export function tokensBound(bytes: number, rule: ByteRule): number {
  return Math.min(bytes, Math.ceil(bytes / Math.max(1, rule.minBytesPerToken)))
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes that does not split a character. */
function utf8Prefix(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return ''
  const buf = Buffer.from(text).subarray(0, maxBytes)
  let end = buf.length
  // Step back over a trailing partial character (continuation bytes 10xxxxxx and its lead byte).
  let i = end - 1
  while (i >= 0 && (buf[i] & 0xc0) === 0x80) i--
  if (i >= 0) {
    const lead = buf[i]
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
    if (end - i < need) end = i
  }
  return buf.subarray(0, end).toString('utf8')
}
