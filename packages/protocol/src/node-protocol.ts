/**
 * @module node-protocol
 * The wire protocol between a node agent (`meshwork-node`) and the coordinator: the device-link
 * flow bodies (HTTP) and the JSON frames of the node WebSocket (`/api/nodes/ws`).
 * One zod discriminated union per direction, discriminated on `type`. See docs/node-protocol.md.
 */
import { z } from 'zod'

/** Bumped on any incompatible change; sent in `hello`. */
export const NODE_PROTOCOL_VERSION = 1

/** Path of the node WebSocket on the coordinator. */
export const NODE_WS_PATH = '/api/nodes/ws'

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

/** What the node runs on. `gpu` is the GPU backend or device name node-llama-cpp sees, or null. */
export const nodeHardwareSchema = z.object({
  cpu_model: z.string(),
  cpu_cores: z.number().int().nonnegative(),
  memory_bytes: z.number().int().nonnegative(),
  gpu: z.string().nullable(),
})
export type NodeHardware = z.infer<typeof nodeHardwareSchema>

/** An inference engine the node offers. `llama.cpp` is embedded; `openai` is an upstream server. */
export const nodeEngineInfoSchema = z.object({
  kind: z.enum(['llama.cpp', 'openai']),
  version: z.string().nullable(),
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

/** One `node_models` record as desired by its owner. */
export const desiredNodeModelSchema = z.object({
  id: z.string().min(1),
  model: nodeModelFileSchema,
  requested_download: z.boolean(),
  requested_serving: z.boolean(),
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
})
export type Sampling = z.infer<typeof samplingSchema>

// ---- node -> server ----

export const helloFrameSchema = z.object({
  type: z.literal('hello'),
  protocol_version: z.number().int().positive(),
  agent_version: z.string(),
  hardware: nodeHardwareSchema,
  engines: z.array(nodeEngineInfoSchema),
  max_jobs: z.number().int().positive(),
})

export const heartbeatFrameSchema = z.object({
  type: z.literal('heartbeat'),
  busy_jobs: z.number().int().nonnegative(),
  max_jobs: z.number().int().positive(),
})

/** The observed state of one node model; `error_message` is '' when there is no error. */
export const modelStatusFrameSchema = z.object({
  type: z.literal('model_status'),
  node_model_id: z.string().min(1),
  is_downloaded: z.boolean(),
  download_progress: z.number().min(0).max(100),
  is_serving: z.boolean(),
  tokens_per_second: z.number().nonnegative(),
  error_message: z.string(),
})

export const jobAcceptedFrameSchema = z.object({
  type: z.literal('job_accepted'),
  job_id: z.string(),
})

/** Sent instead of `job_accepted` when the node cannot take the offer; nothing ran. */
export const jobRejectedFrameSchema = z.object({
  type: z.literal('job_rejected'),
  job_id: z.string(),
  reason: z.string(),
})

export const jobChunkFrameSchema = z.object({
  type: z.literal('job_chunk'),
  job_id: z.string(),
  text: z.string(),
})

export const jobDoneFrameSchema = z.object({
  type: z.literal('job_done'),
  job_id: z.string(),
  tokens_input: z.number().int().nonnegative(),
  tokens_output: z.number().int().nonnegative(),
  processing_time_ms: z.number().int().nonnegative(),
})

export const jobFailedFrameSchema = z.object({
  type: z.literal('job_failed'),
  job_id: z.string(),
  error: z.string(),
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

/** Every frame the coordinator sends. */
export const serverToNodeFrameSchema = z.discriminatedUnion('type', [
  desiredStateFrameSchema,
  jobOfferFrameSchema,
  jobCancelFrameSchema,
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

/** `Authorization` header value a node presents on the WebSocket and on model downloads. */
export function nodeAuthorizationHeader(nodeId: string, credential: string): string {
  return `Bearer ${nodeId}.${credential}`
}
