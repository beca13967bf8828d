/**
 * @module llama-engine
 * Embedded llama.cpp through node-llama-cpp (prebuilt binaries only, never a local build).
 */
import { stat } from 'node:fs/promises'
import type { Llama, LlamaContextSequence, LlamaModel } from 'node-llama-cpp'
import { chooseThreads } from './choose-threads.ts'
import {
  GenerationAbortedError,
  GenerationError,
  ModelLoadError,
  ScoreError,
  type EngineModelRef,
  type GenerationOptions,
  type GenerationRequest,
  type GenerationResult,
  type InferenceEngine,
  type LoadedModel,
} from './inference-engine.ts'
import { backendClass, engineVersion } from './llama-backend.ts'
import {
  beginningToken,
  modelChatWrapper,
  plainPrompt,
  samplingOptions,
  toChatHistory,
} from './llama-prompt.ts'
import { answerTokens, scoreContinuation } from './llama-score.ts'
import { PLAIN_TRANSCRIPT_STOP } from './plain-transcript.ts'
import { SequencePool } from './sequence-pool.ts'
import { guardStopSequences } from './stop-sequences.ts'

export interface LlamaEngineOptions {
  /** 'auto' uses CUDA/Metal/Vulkan when a prebuilt binary and device exist; false forces CPU. */
  gpu?: 'auto' | false
  /** Threads per model; 'auto' (default) follows `chooseThreads`. */
  threads?: number | 'auto'
  /** Jobs one loaded model runs at once (one context sequence each). */
  parallel?: number
  /** Upper bound for a model's context window (the protocol's context_length cap). */
  maxContextLength?: number
  /** 'auto': the model's chat template when it has one, else the plain transcript. */
  promptFormat?: 'auto' | 'chat-template' | 'plain'
  /** llama.cpp's batch size (prompt tokens evaluated at once); default node-llama-cpp's. */
  batchSize?: number
}

/** Resolved settings of one loaded model, for tests and status displays. */
export interface LlamaModelSettings {
  threads: number
  contextSize: number
  promptFormat: 'chat-template' | 'plain'
}

export interface LlamaLoadedModel extends LoadedModel {
  readonly settings: LlamaModelSettings
}

/** The embedded engine; its loaded models also tell their resolved settings. */
export interface LlamaEngine extends InferenceEngine {
  load(model: EngineModelRef, signal?: AbortSignal): Promise<LlamaLoadedModel>
}

/** Creates the engine; the native library loads lazily on the first `load`. */
export function createLlamaEngine(options: LlamaEngineOptions = {}): LlamaEngine {
  let llamaPromise: Promise<Llama> | undefined
  const loaded = new Set<LlamaLoadedModel>()
  const llama = () =>
    (llamaPromise ??= nodeLlamaCpp().then(({ getLlama, LlamaLogLevel }) =>
      getLlama({
        build: 'never',
        gpu: options.gpu === false ? false : 'auto',
        logLevel: LlamaLogLevel.error,
        // Library code never prints: llama.cpp's own log lines are dropped.
        logger: () => {},
      }),
    ))

  return {
    info: { kind: 'llama.cpp', version: null, backend: 'unknown' },
    needsModelFile: true,
    async load(ref, signal) {
      if (!ref.path) throw new ModelLoadError(`Model ${ref.name} has no local file`)
      try {
        const m = await loadLlamaModel(await llama(), ref, options, signal)
        loaded.add(m)
        return { ...m, unload: async () => (loaded.delete(m), m.unload()) }
      } catch (err) {
        throw new ModelLoadError(`Failed to load ${ref.name}: ${errorText(err)}`, { cause: err })
      }
    },
    async describeGpu() {
      // CPU only by choice: no need to pay for loading the native library just to say so.
      if (options.gpu === false) return null
      const l = await llama()
      if (l.gpu === false) return null
      const names = await l.getGpuDeviceNames().catch(() => [])
      return names.length > 0 ? `${l.gpu}: ${names.join(', ')}` : String(l.gpu)
    },
    async describe() {
      const l = await llama()
      const { getModuleVersion } = await nodeLlamaCpp()
      return {
        kind: 'llama.cpp',
        version: engineVersion(await getModuleVersion(), l),
        backend: backendClass(l),
      }
    },
    async describeVram() {
      if (options.gpu === false) return null
      const l = await llama()
      if (l.gpu === false) return null
      const { total } = await l.getVramState()
      return total > 0 ? total : null
    },
    async dispose() {
      await Promise.all([...loaded].map((m) => m.unload()))
      loaded.clear()
      if (llamaPromise) await (await llamaPromise).dispose()
    },
  }
}

async function loadLlamaModel(
  llama: Llama,
  ref: EngineModelRef,
  options: LlamaEngineOptions,
  signal?: AbortSignal,
): Promise<LlamaLoadedModel> {
  const { size } = await stat(ref.path!)
  const model = await llama.loadModel({ modelPath: ref.path!, loadSignal: signal })
  const hasTemplate = typeof model.fileInfo.metadata.tokenizer?.chat_template === 'string'
  const format = options.promptFormat ?? 'auto'
  const settings: LlamaModelSettings = {
    threads: chooseThreads({
      requested: options.threads,
      modelBytes: size,
      mathCores: llama.cpuMathCores,
    }),
    contextSize: Math.min(model.trainContextSize, options.maxContextLength ?? 8000),
    promptFormat: format === 'auto' ? (hasTemplate ? 'chat-template' : 'plain') : format,
  }
  const parallel = Math.max(1, options.parallel ?? 1)
  const context = await model
    .createContext({
      contextSize: settings.contextSize,
      threads: settings.threads,
      sequences: parallel,
      batchSize: options.batchSize,
      createSignal: signal,
    })
    .catch(async (err: unknown) => {
      await model.dispose()
      throw err
    })
  const sequences = Array.from({ length: parallel }, () => context.getSequence())
  const pool = new SequencePool(sequences)

  return {
    ref,
    settings,
    async generate(request, genOptions) {
      const sequence = await pool.acquire(genOptions.signal).catch((err: unknown) => {
        throw new GenerationAbortedError({ cause: err })
      })
      const stops = request.sampling.stop?.length
        ? guardStopSequences(request.sampling.stop, genOptions)
        : null
      try {
        await sequence.clearHistory()
        const options = stops?.options ?? genOptions
        const result =
          settings.promptFormat === 'plain'
            ? await generatePlain(model, sequence, request, options)
            : await generateChat(model, sequence, request, options)
        // Aborts end the generation quietly (a stop sequence's too); the caller's is an error.
        if (genOptions.signal?.aborted) throw new GenerationAbortedError()
        return stops ? stops.finish(result) : result
      } catch (err) {
        if (genOptions.signal?.aborted) throw new GenerationAbortedError({ cause: err })
        if (err instanceof GenerationError) throw err
        throw new GenerationError(`Generation failed: ${errorText(err)}`, { cause: err })
      } finally {
        stops?.release()
        pool.release(sequence)
      }
    },
    async score(request, signal) {
      if (settings.promptFormat !== 'plain')
        throw new ScoreError('Only plain-transcript models can be scored')
      const sequence = await pool.acquire(signal).catch((err: unknown) => {
        throw new GenerationAbortedError({ cause: err })
      })
      try {
        await sequence.clearHistory()
        const prompt = plainPrompt(model, sequence.contextSize, request.messages, request.sampling)
        const first = beginningToken(model)
        const prefix = first === null ? prompt.tokens : [first, ...prompt.tokens]
        const { tokens, idsMatch } = answerTokens(model, request.text, request.tokens)
        if (tokens.length === 0) return { tokens, positions: [], idsMatch }
        const positions = await scoreContinuation(model, sequence, prefix, tokens, request.sampling)
        return { tokens, positions, idsMatch }
      } finally {
        await sequence.clearHistory().catch(() => {})
        pool.release(sequence)
      }
    },
    async unload() {
      await context.dispose()
      await model.dispose()
    },
  }
}

/**
 * node-llama-cpp is imported on first use: importing it costs seconds, which `--help`, the
 * upstream engine and embedders that never load a model should not pay.
 */
function nodeLlamaCpp() {
  return import('node-llama-cpp')
}

/** Plain transcript through LlamaCompletion; oldest turns are dropped to fit the window. */
async function generatePlain(
  model: LlamaModel,
  sequence: LlamaContextSequence,
  { messages, sampling }: GenerationRequest,
  { signal, onText }: GenerationOptions,
): Promise<GenerationResult> {
  const { tokens, maxTokens } = plainPrompt(model, sequence.contextSize, messages, sampling)
  let tokensOutput = 0
  // node-llama-cpp hands over each released batch of tokens, then the text they decode to.
  let released: number[] = []
  const { LlamaCompletion } = await nodeLlamaCpp()
  const completion = new LlamaCompletion({ contextSequence: sequence })
  const res = await completion.generateCompletionWithMeta(tokens, {
    ...samplingOptions(sampling),
    maxTokens,
    signal,
    customStopTriggers: [PLAIN_TRANSCRIPT_STOP, ...(sampling.stop ?? [])],
    trimWhitespaceSuffix: true,
    stopOnAbortSignal: true,
    onToken: (t) => {
      tokensOutput += t.length
      released = t
    },
    onTextChunk: (text) => {
      onText(text, released)
      released = []
    },
  })
  return {
    tokensInput: tokens.length,
    tokensOutput,
    stopReason: res.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
  }
}

/** The model's own chat template through LlamaChat (it shifts context itself when needed). */
async function generateChat(
  model: LlamaModel,
  sequence: LlamaContextSequence,
  { messages, sampling }: GenerationRequest,
  { signal, onText }: GenerationOptions,
): Promise<GenerationResult> {
  const { LlamaChat } = await nodeLlamaCpp()
  const chat = new LlamaChat({
    contextSequence: sequence,
    chatWrapper: await modelChatWrapper(model),
  })
  const before = sequence.tokenMeter.getState()
  let tokensOutput = 0
  const res = await chat.generateResponse(toChatHistory(messages), {
    ...samplingOptions(sampling),
    maxTokens: Math.min(
      sampling.max_tokens,
      Math.min(sequence.contextSize, sampling.context_length),
    ),
    ...(sampling.stop?.length ? { customStopTriggers: sampling.stop } : {}),
    signal,
    stopOnAbortSignal: true,
    onToken: (t) => (tokensOutput += t.length),
    onTextChunk: (text) => onText(text),
  })
  const used = sequence.tokenMeter.usedInputTokens - before.usedInputTokens
  return {
    tokensInput: Math.max(0, used - tokensOutput),
    tokensOutput,
    stopReason: res.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
