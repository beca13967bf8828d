/**
 * @module inference-engine
 * The one interface every engine (embedded llama.cpp, upstream OpenAI-compatible server) implements.
 */
import type { ChatMessage, NodeEngineInfo, Sampling, ScoredPosition } from '@meshwork/protocol'

/** What an engine needs to load a catalogue model. `path` is null for engines without files. */
export interface EngineModelRef {
  id: string
  name: string
  path: string | null
}

export interface GenerationRequest {
  messages: ChatMessage[]
  sampling: Sampling
}

export interface GenerationOptions {
  signal?: AbortSignal
  /**
   * Called with each piece of decoded text, in order; concatenated they are the answer. `tokens`
   * are the ids of the tokens that piece decodes from (engines that see ids: llama.cpp); decoded
   * in order, all of them spell the answer.
   */
  onText: (text: string, tokens?: readonly number[]) => void
}

export interface GenerationResult {
  tokensInput: number
  tokensOutput: number
  stopReason: 'stop' | 'length'
}

/** A reference node's teacher-forced replay of another node's answer after a prompt. */
export interface ScoreRequest {
  messages: ChatMessage[]
  /** The job's sampling: its repeat penalty is part of what a greedy node picks. */
  sampling: Sampling
  /** The answer as that node streamed it, and its token ids if it sent them. */
  text: string
  tokens?: readonly number[]
}

/** Each scored token's position, the tokens scored, and whether they were the node's own ids. */
export interface ScoreResult {
  tokens: number[]
  positions: ScoredPosition[]
  /** null: the node sent no ids; false: its ids were not in the vocabulary or spelled other text. */
  idsMatch: boolean | null
}

/** A model an engine has loaded and can generate with; `unload` frees it. */
export interface LoadedModel {
  readonly ref: EngineModelRef
  generate(request: GenerationRequest, options: GenerationOptions): Promise<GenerationResult>
  /** Scores each token of `tokens` (engines that can evaluate token sequences: llama.cpp). */
  score?(request: ScoreRequest, signal?: AbortSignal): Promise<ScoreResult>
  unload(): Promise<void>
}

export interface InferenceEngine {
  /** What the engine is, before `describe` has looked (backend `unknown`). */
  readonly info: NodeEngineInfo
  /** False for engines that serve models by name (upstream servers): no download is needed. */
  readonly needsModelFile: boolean
  load(model: EngineModelRef, signal?: AbortSignal): Promise<LoadedModel>
  /** GPU name/backend the engine sees, or null. */
  describeGpu(): Promise<string | null>
  /** The engine with its version and backend class, as `hello` reports it. */
  describe(): Promise<NodeEngineInfo>
  /** Total GPU memory the engine can use, in bytes; null without a GPU (optional). */
  describeVram?(): Promise<number | null>
  dispose(): Promise<void>
}

/** Thrown by `generate` when its signal aborted the run. */
export class GenerationAbortedError extends Error {
  override name = 'GenerationAbortedError'
  constructor(options?: { cause?: unknown }) {
    super('Generation aborted', options)
  }
}

/** Thrown when a model cannot be loaded or reached. */
export class ModelLoadError extends Error {
  override name = 'ModelLoadError'
}

/** Thrown by `score` for tokens the model cannot replay (ids outside its vocabulary). */
export class ScoreError extends Error {
  override name = 'ScoreError'
}

/** Thrown when an engine fails mid-generation. */
export class GenerationError extends Error {
  override name = 'GenerationError'
}
