/**
 * @module @meshwork/node
 * The node agent as a library: explicit named exports only (no `export *`).
 *
 * @example
 * const agent = await startAgent({ server: 'http://127.0.0.1:8090', nodeId, credential, home })
 * agent.events.on('model_status', (s) => ...)
 * await agent.stop()
 */
export { startAgent } from './agent/start-agent.ts'
export type { AgentEventMap, RunningAgent, StartAgentOptions } from './agent/start-agent.ts'
export { AGENT_VERSION } from './agent/agent-version.ts'
export type { JobEvent } from './agent/job-runner.ts'
export { REJECT_NO_SLOT, REJECT_NOT_SERVING } from './agent/job-runner.ts'
export {
  ChecksumMismatchError,
  DownloadHttpError,
  downloadModelFile,
  partialPath,
} from './agent/download-model-file.ts'
export type { DownloadModelFileOptions } from './agent/download-model-file.ts'
export { ModelManager, UnsafeFileNameError } from './agent/model-manager.ts'
export { measureTokensPerSecond } from './agent/measure-tokens-per-second.ts'
export { InvalidFrameError, nodeSocketUrl } from './agent/node-connection.ts'
export type { CloseInfo } from './agent/node-connection.ts'
export { describeNetworkError } from './agent/network-errors.ts'
export {
  LinkDeniedError,
  LinkExpiredError,
  LinkStartError,
  linkDevice,
} from './auth/link-device.ts'
export type { LinkDeviceOptions, LinkedDevice } from './auth/link-device.ts'
export {
  MissingCredentialsError,
  credentialsPath,
  readCredentials,
  writeCredentials,
} from './auth/credentials-store.ts'
export type { NodeCredentials } from './auth/credentials-store.ts'
export {
  GenerationAbortedError,
  GenerationError,
  ModelLoadError,
} from './inference/inference-engine.ts'
export type {
  EngineModelRef,
  GenerationOptions,
  GenerationRequest,
  GenerationResult,
  InferenceEngine,
  LoadedModel,
} from './inference/inference-engine.ts'
export { createLlamaEngine } from './inference/llama-engine.ts'
export type {
  LlamaEngine,
  LlamaEngineOptions,
  LlamaLoadedModel,
  LlamaModelSettings,
} from './inference/llama-engine.ts'
export { createUpstreamEngine } from './inference/upstream-engine.ts'
export type { UpstreamEngineOptions } from './inference/upstream-engine.ts'
export { chooseThreads } from './inference/choose-threads.ts'
export { plainTranscript } from './inference/plain-transcript.ts'
export { modelsDirectory, resolveNodeHome } from './node-home.ts'
