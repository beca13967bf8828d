/**
 * @module inference-engine
 * The one interface every engine (embedded llama.cpp, upstream OpenAI-compatible server) implements.
 */
import type { ChatMessage, NodeEngineInfo, Sampling } from '@meshwork/protocol'

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
  /** Called with each piece of decoded text, in order; concatenated they are the answer. */
  onText: (text: string) => void
}

export interface GenerationResult {
  tokensInput: number
  tokensOutput: number
  stopReason: 'stop' | 'length'
}

/** A model an engine has loaded and can generate with; `unload` frees it. */
export interface LoadedModel {
  readonly ref: EngineModelRef
  generate(request: GenerationRequest, options: GenerationOptions): Promise<GenerationResult>
  unload(): Promise<void>
}

export interface InferenceEngine {
  readonly info: NodeEngineInfo
  /** False for engines that serve models by name (upstream servers): no download is needed. */
  readonly needsModelFile: boolean
  load(model: EngineModelRef, signal?: AbortSignal): Promise<LoadedModel>
  /** GPU name/backend the engine sees, or null. */
  describeGpu(): Promise<string | null>
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

/** Thrown when an engine fails mid-generation. */
export class GenerationError extends Error {
  override name = 'GenerationError'
}
