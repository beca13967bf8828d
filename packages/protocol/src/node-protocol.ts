/**
 * @module node-protocol
 * The wire protocol between a node agent (`meshwork-node`) and the coordinator: the device-link
 * flow bodies (HTTP) and the JSON frames of the node WebSocket (`/api/nodes/ws`).
 * One zod discriminated union per direction, discriminated on `type`. See docs/node-protocol.md.
 */
import { z } from 'zod'

/**
 * Sent in `hello`. 2 added token ids in chunks, the engine's backend class and the reference
 * scoring frames; a version 1 node still works (its answers are metered from their text).
 */
export const NODE_PROTOCOL_VERSION = 2

/**
 * The longest strings a node may send. Everything a node says is untrusted: the coordinator stores
 * some of it and shows it to people, so every string has a bound and a frame over one is dropped.
 */
export const NODE_TEXT_LIMITS = {
  /** Ids the coordinator gave (job, node model, score): its ids are 15 characters. */
  id: 64,
  agentVersion: 64,
  cpuModel: 200,
  gpu: 200,
  engineVersion: 100,
  /** A job_rejected reason. */
  reason: 200,
  /** A job_failed error or a model_status error_message (shown to the node's owner only). */
  error: 1000,
  /** Text of one job_chunk (the agent sends a chunk every 20 ms, far below this). */
  chunkText: 65_536,
  /** Token ids in one job_chunk. */
  chunkTokens: 4096,
} as const

/** Most jobs a node may offer to run at once. */
export const MAX_NODE_JOBS = 64

/**
 * What a node's engine computes on (hello `engines[].backend`): `cpu-<instruction set>` (cpu-avx512,
 * cpu-avx2, cpu-avx, cpu-neon, cpu), `cuda`, `metal`, `vulkan`, or `upstream` for an
 * OpenAI-compatible server whose hardware the agent cannot see. Verification thresholds are set per
 * model file and backend class: numerics differ between classes.
 */
export const backendClassSchema = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,31}$/)

/** Path of the node WebSocket on the coordinator. */
export const NODE_WS_PATH = '/api/nodes/ws'

/**
 * The close code of a node socket that a newer connection of the same node replaced (on the same
 * coordinator process or another): another machine, or another copy of the agent, is using this
 * node's credential. The agent stops instead of reconnecting (two copies would take turns).
 */
export const NODE_REPLACED_CLOSE_CODE = 4001

/**
 * The close code of a node socket that stopped reading: the coordinator held more of what it sent
 * than an honest node is ever sent at once, and cut it rather than buffer without end. Its jobs go
 * to other nodes; the agent reconnects as after any other close.
 */
export const NODE_NOT_READING_CLOSE_CODE = 4002

// ---- device-link flow (HTTP) ----

/** POST /api/auth/start-flow body. */
export const startFlowRequestSchema = z.object({
  device_name: z.string().min(1).max(200),
})
export type StartFlowRequest = z.infer<typeof startFlowRequestSchema>

/** POST /api/auth/start-flow answer. `expires_at` is an ISO 8601 date string. */
export const startFlowResponseSchema = z.object({
  state_token: z.string().min(1),
  device_secret: z.string().min(1),
  approve_url: z.string().min(1),
  expires_at: z.string(),
})
export type StartFlowResponse = z.infer<typeof startFlowResponseSchema>

/** POST /api/auth/wait-flow body. */
export const waitFlowRequestSchema = z.object({
  state_token: z.string().min(1),
  device_secret: z.string().min(1),
})
export type WaitFlowRequest = z.infer<typeof waitFlowRequestSchema>

/** POST /api/auth/wait-flow 200 answer (a long poll: `pending` means ask again). */
export const waitFlowResponseSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('pending') }),
  z.object({
    status: z.literal('approved'),
    node_id: z.string().min(1),
    credential: z.string().min(1),
  }),
])
export type WaitFlowResponse = z.infer<typeof waitFlowResponseSchema>

// ---- shared pieces of the WebSocket frames ----

/**
 * What the node runs on. `gpu` is the GPU backend or device name node-llama-cpp sees, or null;
 * `vram_bytes` the GPU memory it reports (absent from older agents, null without a GPU).
 */
export const nodeHardwareSchema = z.object({
  cpu_model: z.string().max(NODE_TEXT_LIMITS.cpuModel),
  cpu_cores: z.number().int().nonnegative().max(65_536),
  memory_bytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  gpu: z.string().max(NODE_TEXT_LIMITS.gpu).nullable(),
  vram_bytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).nullable().optional(),
})
export type NodeHardware = z.infer<typeof nodeHardwareSchema>

/**
 * An inference engine the node offers. `llama.cpp` is embedded; `openai` is an upstream server.
 * `version` names the engine build (for llama.cpp: node-llama-cpp and llama.cpp releases).
 * A version 1 node sends no backend: it reads as `unknown`.
 */
export const nodeEngineInfoSchema = z.object({
  kind: z.enum(['llama.cpp', 'openai']),
  version: z.string().max(NODE_TEXT_LIMITS.engineVersion).nullable(),
  backend: backendClassSchema.default('unknown'),
})
export type NodeEngineInfo = z.infer<typeof nodeEngineInfoSchema>

/** A catalogue model as the node needs it to download and verify the file. */
export const nodeModelFileSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  file_name: z.string().min(1),
  file_size_bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/i),
})
export type NodeModelFile = z.infer<typeof nodeModelFileSchema>

/**
 * One `node_models` record as desired by its owner. `retry` changes when the owner asks for
 * another try now (the Retry button): the node forgets its last download or load failure and its
 * backoff. Opaque; absent from older coordinators.
 */
export const desiredNodeModelSchema = z.object({
  id: z.string().min(1),
  model: nodeModelFileSchema,
  requested_download: z.boolean(),
  requested_serving: z.boolean(),
  retry: z.string().max(64).optional(),
})
export type DesiredNodeModel = z.infer<typeof desiredNodeModelSchema>

export const chatRoleSchema = z.enum(['system', 'user', 'assistant'])
export type ChatRole = z.infer<typeof chatRoleSchema>

export const chatMessageSchema = z.object({ role: chatRoleSchema, content: z.string() })
export type ChatMessage = z.infer<typeof chatMessageSchema>

/** Sampling parameters of one job; `context_length` is capped by the node to the model's. */
export const samplingSchema = z.object({
  temperature: z.number().min(0).max(2),
  top_p: z.number().min(0).max(1),
  top_k: z.number().int().nonnegative(),
  repeat_penalty: z.number().nonnegative(),
  frequency_penalty: z.number().min(-2).max(2),
  presence_penalty: z.number().min(-2).max(2),
  max_tokens: z.number().int().positive(),
  context_length: z.number().int().positive(),
  /** Stop sequences: the answer ends before the first one, which is not part of it. */
  stop: z.array(z.string().min(1).max(100)).max(4).optional(),
  /** Sampling seed: the same seed, prompt and model on the same engine give the same answer. */
  seed: z.number().int().min(0).max(0xffffffff).optional(),
})
export type Sampling = z.infer<typeof samplingSchema>

// ---- node -> server ----

const id = z.string().min(1).max(NODE_TEXT_LIMITS.id)

export const helloFrameSchema = z.object({
  type: z.literal('hello'),
  protocol_version: z.number().int().positive(),
  agent_version: z.string().max(NODE_TEXT_LIMITS.agentVersion),
  hardware: nodeHardwareSchema,
  engines: z.array(nodeEngineInfoSchema).max(4),
  max_jobs: z.number().int().positive().max(MAX_NODE_JOBS),
})

export const heartbeatFrameSchema = z.object({
  type: z.literal('heartbeat'),
  busy_jobs: z.number().int().nonnegative().max(MAX_NODE_JOBS),
  max_jobs: z.number().int().positive().max(MAX_NODE_JOBS),
  /** The node is shutting down: it finishes its jobs and takes no new ones. */
  draining: z.boolean().optional(),
})

/**
 * The observed state of one node model; `error_message` is '' when there is no error.
 * `tokens_per_second` is the node's own claim: shown to its owner as reported, never used to route.
 */
export const modelStatusFrameSchema = z.object({
  type: z.literal('model_status'),
  node_model_id: id,
  is_downloaded: z.boolean(),
  download_progress: z.number().min(0).max(100),
  is_serving: z.boolean(),
  tokens_per_second: z.number().nonnegative().max(1e12),
  error_message: z.string().max(NODE_TEXT_LIMITS.error),
})

export const jobAcceptedFrameSchema = z.object({
  type: z.literal('job_accepted'),
  job_id: id,
})

/** Sent instead of `job_accepted` when the node cannot take the offer; nothing ran. */
export const jobRejectedFrameSchema = z.object({
  type: z.literal('job_rejected'),
  job_id: id,
  reason: z.string().max(NODE_TEXT_LIMITS.reason),
})

/** A token id of the model's vocabulary. */
export const tokenIdSchema = z
  .number()
  .int()
  .nonnegative()
  .max(2 ** 31 - 1)

/**
 * Text in order, with the ids of the tokens the engine generated since the previous chunk.
 * Decoded in order, all of a job's ids spell its text, followed at most by what the engine held
 * back at the end (a stop sequence, trimmed white space). An engine that cannot see token ids
 * (an upstream server) leaves `tokens` out; its answers are metered from their text alone.
 */
export const jobChunkFrameSchema = z.object({
  type: z.literal('job_chunk'),
  job_id: id,
  text: z.string().max(NODE_TEXT_LIMITS.chunkText),
  tokens: z.array(tokenIdSchema).max(NODE_TEXT_LIMITS.chunkTokens).optional(),
})

/** Token counts here are the node's claim: the coordinator counts for itself and bills no more. */
export const jobDoneFrameSchema = z.object({
  type: z.literal('job_done'),
  job_id: id,
  tokens_input: z.number().int().nonnegative(),
  tokens_output: z.number().int().nonnegative(),
  processing_time_ms: z.number().int().nonnegative(),
})

/** The error is shown to the node's owner only; users see the coordinator's own message. */
export const jobFailedFrameSchema = z.object({
  type: z.literal('job_failed'),
  job_id: id,
  error: z.string().max(NODE_TEXT_LIMITS.error),
})

/**
 * A reference node's teacher-forced reading of another node's tokens, one entry per token:
 * `top` is the token the reference would have picked there (greedy, with the job's repeat
 * penalty), `lead` how far its logit leads the runner-up's, `logprob` the natural log-probability
 * the reference gives the scored token and `top_logprob` the one it gives its own pick.
 * For a sampled job (temperature > 0) it also reports `expected` and `variance`: the mean and
 * variance of that log-probability when the token is drawn as an honest node's sampler draws it
 * there (top-k, top-p, temperature; spot checks, docs/verification.md). Absent where the
 * reference cannot tell the sampler's choices apart (greedy jobs, a support it did not see whole).
 */
export const scoredPositionSchema = z.object({
  top: tokenIdSchema,
  lead: z.number().nonnegative(),
  logprob: z.number().max(0),
  top_logprob: z.number().max(0),
  expected: z.number().max(0).optional(),
  variance: z.number().nonnegative().optional(),
})
export type ScoredPosition = z.infer<typeof scoredPositionSchema>

/**
 * `tokens` are the ids the reference scored: the judged node's own when they spell its text
 * (`ids_match: true`), otherwise the reference's tokenization of the text (`false`: the node's ids
 * were outside the vocabulary or spelled something else; `null`: the node sent none).
 */
export const scoreResultFrameSchema = z.object({
  type: z.literal('score_result'),
  score_id: id,
  tokens: z.array(tokenIdSchema).max(NODE_TEXT_LIMITS.chunkTokens),
  positions: z.array(scoredPositionSchema).max(NODE_TEXT_LIMITS.chunkTokens),
  ids_match: z.boolean().nullable(),
})

export const scoreFailedFrameSchema = z.object({
  type: z.literal('score_failed'),
  score_id: id,
  error: z.string().max(NODE_TEXT_LIMITS.error),
})

/** Every frame a node sends. */
export const nodeToServerFrameSchema = z.discriminatedUnion('type', [
  helloFrameSchema,
  heartbeatFrameSchema,
  modelStatusFrameSchema,
  jobAcceptedFrameSchema,
  jobRejectedFrameSchema,
  jobChunkFrameSchema,
  jobDoneFrameSchema,
  jobFailedFrameSchema,
  scoreResultFrameSchema,
  scoreFailedFrameSchema,
])
export type NodeToServerFrame = z.infer<typeof nodeToServerFrameSchema>

// ---- server -> node ----

/** The full desired set of the node's models; sent on connect and after every change. */
export const desiredStateFrameSchema = z.object({
  type: z.literal('desired_state'),
  node_models: z.array(desiredNodeModelSchema),
})

export const jobOfferFrameSchema = z.object({
  type: z.literal('job_offer'),
  job_id: z.string().min(1),
  request_id: z.string().min(1),
  /** The catalogue model id (`node_models.model`), not a node model id. */
  model_id: z.string().min(1),
  prompt: z.object({ messages: z.array(chatMessageSchema).min(1) }),
  sampling: samplingSchema,
})

export const jobCancelFrameSchema = z.object({ type: z.literal('job_cancel'), job_id: z.string() })

/**
 * Sent to reference nodes only (the built-in node, nodes an operator trusts): replay `prompt`
 * (rendered as the node renders a job's prompt) followed by another node's answer in one
 * evaluation and score each answer token (`score_result`). The answer is `text` and, when that
 * node sent them, its token `tokens`. Nothing is generated; `sampling` supplies the repeat penalty.
 */
export const scoreRequestFrameSchema = z.object({
  type: z.literal('score_request'),
  score_id: z.string().min(1),
  model_id: z.string().min(1),
  prompt: z.object({ messages: z.array(chatMessageSchema).min(1) }),
  sampling: samplingSchema,
  text: z.string(),
  tokens: z.array(tokenIdSchema).max(NODE_TEXT_LIMITS.chunkTokens).optional(),
})

/** Every frame the coordinator sends. */
export const serverToNodeFrameSchema = z.discriminatedUnion('type', [
  desiredStateFrameSchema,
  jobOfferFrameSchema,
  jobCancelFrameSchema,
  scoreRequestFrameSchema,
])
export type ServerToNodeFrame = z.infer<typeof serverToNodeFrameSchema>

export type HelloFrame = z.infer<typeof helloFrameSchema>
export type HeartbeatFrame = z.infer<typeof heartbeatFrameSchema>
export type ModelStatusFrame = z.infer<typeof modelStatusFrameSchema>
export type JobAcceptedFrame = z.infer<typeof jobAcceptedFrameSchema>
export type JobRejectedFrame = z.infer<typeof jobRejectedFrameSchema>
export type JobChunkFrame = z.infer<typeof jobChunkFrameSchema>
export type JobDoneFrame = z.infer<typeof jobDoneFrameSchema>
export type JobFailedFrame = z.infer<typeof jobFailedFrameSchema>
export type DesiredStateFrame = z.infer<typeof desiredStateFrameSchema>
export type JobOfferFrame = z.infer<typeof jobOfferFrameSchema>
export type JobCancelFrame = z.infer<typeof jobCancelFrameSchema>
export type ScoreRequestFrame = z.infer<typeof scoreRequestFrameSchema>
export type ScoreResultFrame = z.infer<typeof scoreResultFrameSchema>
export type ScoreFailedFrame = z.infer<typeof scoreFailedFrameSchema>

/** `Authorization` header value a node presents on the WebSocket and on model downloads. */
export function nodeAuthorizationHeader(nodeId: string, credential: string): string {
  return `Bearer ${nodeId}.${credential}`
}
