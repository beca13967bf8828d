/**
 * @module Test helpers for the inference network: linking a node through the real HTTP flow, a
 * scripted fake node speaking the wire protocol over a real WebSocket, and polling.
 */
import WebSocket from 'ws'
import type PocketBase from 'pocketbase'
import {
  NODE_WS_PATH,
  NODE_PROTOCOL_VERSION,
  nodeAuthorizationHeader,
  serverToNodeFrameSchema,
  type JobOfferFrame,
  type NodeToServerFrame,
  type ServerToNodeFrame,
} from '@meshwork/protocol'
import { expect } from 'vitest'
import { signUp, type TestServer } from '../harness.ts'

import { waitUntil } from '@meshwork/test-kit'

export { waitUntil }

export async function postJson(server: TestServer, path: string, body: unknown, token?: string) {
  const res = await fetch(new URL(path, server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

/** Sends a chat message as `pb`'s user; answers the new request's id (a refused send throws). */
export async function sendChat(
  server: TestServer,
  pb: PocketBase,
  message: { conversation: string; model: string; prompt: string },
): Promise<string> {
  const res = await postJson(
    server,
    '/api/chat/send',
    { conversation_id: message.conversation, model_id: message.model, prompt: message.prompt },
    pb.authStore.token,
  )
  if (res.status !== 200) throw new Error(`send refused: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.request_id as string
}

/**
 * Sends `prompt` as `pb`'s user in a new conversation titled `title`, expecting it accepted (200);
 * answers the new request's id and the conversation's.
 */
export async function sendInNewConversation(
  server: TestServer,
  pb: PocketBase,
  message: { title: string; model: string; prompt: string },
) {
  const conversation = await pb.collection('conversations').create({ title: message.title })
  const sent = await postJson(
    server,
    '/api/chat/send',
    { conversation_id: conversation.id, model_id: message.model, prompt: message.prompt },
    pb.authStore.token,
  )
  expect(sent.status).toBe(200)
  return { request: sent.body.request_id as string, conversation: conversation.id }
}

/** Sends 'Tell me a story' in a new conversation of `pb`'s user; answers the request's id. */
export async function askStory(server: TestServer, model: string, pb: PocketBase) {
  const conversation = await pb
    .collection('conversations')
    .create({ title: 'New Chat', user: pb.authStore.record!.id })
  return sendChat(server, pb, { conversation: conversation.id, model, prompt: 'Tell me a story' })
}

/** The stored row of a request. */
export const requestRowOf = (server: TestServer, id: string) =>
  server.core.database.db
    .selectFrom('requests')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow()

/** The request's row once it completed or failed. */
export const requestEnded = (server: TestServer, id: string, ms = 20_000) =>
  waitUntil(
    async () => {
      const r = await requestRowOf(server, id)
      return (r.status === 'completed' || r.status === 'failed') && r
    },
    ms,
    'request ended',
  )

/** Runs the device-link flow for the signed-in owner and returns the node's credential. */
export async function linkNode(server: TestServer, owner: PocketBase, deviceName = 'Test node') {
  const start = await postJson(server, '/api/auth/start-flow', { device_name: deviceName })
  const flow = start.body as { state_token: string; device_secret: string }
  const waiting = postJson(server, '/api/auth/wait-flow', flow)
  const approve = await postJson(
    server,
    '/api/auth/complete-flow',
    { state_token: flow.state_token, user_info: {} },
    owner.authStore.token,
  )
  if (approve.status !== 200) throw new Error(`approve failed: ${JSON.stringify(approve.body)}`)
  // The long poll may come back pending on a slow machine (its window elapsed first): ask again.
  let answer = await waiting
  while (answer.status === 200 && answer.body.status === 'pending') {
    answer = await postJson(server, '/api/auth/wait-flow', flow)
  }
  if (answer.status !== 200 || typeof answer.body.credential !== 'string') {
    throw new Error(`wait-flow gave no credential: ${answer.status} ${JSON.stringify(answer.body)}`)
  }
  return { nodeId: answer.body.node_id as string, credential: answer.body.credential as string }
}

export type JobScript = 'stream' | 'hang' | 'reject' | 'fail'

/** A node agent in miniature: reports every requested model as served and runs scripted jobs. */
export class FakeNode {
  ws!: WebSocket
  frames: ServerToNodeFrame[] = []
  script: JobScript = 'stream'
  chunks = ['Once', ' upon', ' a', ' time']
  chunkDelayMs = 20
  tokensInputReported = 999
  /** What job_done claims as output tokens (default: one per chunk). */
  tokensOutputReported: number | null = null
  /** Token ids sent with each chunk (by index), when set. */
  chunkTokens: number[][] | null = null
  /** What model_status claims as tokens per second. */
  tokensPerSecondClaim = 100
  /** The error text of a 'fail' script. */
  failError = 'Engine error'
  /** Fields that replace the default hello's. */
  hello: Partial<Extract<NodeToServerFrame, { type: 'hello' }>> = {}
  jobs: JobOfferFrame[] = []
  /** Offers to answer with 'No free job slot' before running any. */
  rejectNext = 0
  /** Answers every offer instead of the script, when set. */
  onOffer: ((job: JobOfferFrame) => void) | null = null
  private heartbeat: NodeJS.Timeout | null = null

  constructor(
    readonly server: TestServer,
    readonly nodeId: string,
    readonly credential: string,
    readonly maxJobs = 1,
  ) {}

  /** Connects; resolves with the upgrade's outcome (HTTP status when refused). */
  connect(
    authorization = nodeAuthorizationHeader(this.nodeId, this.credential),
  ): Promise<'open' | number> {
    const url = new URL(NODE_WS_PATH, this.server.url)
    url.protocol = 'ws:'
    this.ws = new WebSocket(url, { headers: { authorization } })
    this.ws.on('message', (data) =>
      this.onFrame(serverToNodeFrameSchema.parse(JSON.parse(String(data)))),
    )
    this.ws.on('error', () => {})
    this.ws.on('close', () => this.silence())
    return new Promise((resolve) => {
      this.ws.on('open', () => {
        this.send({
          type: 'hello',
          protocol_version: NODE_PROTOCOL_VERSION,
          agent_version: 'fake',
          hardware: { cpu_model: 'fake', cpu_cores: 1, memory_bytes: 1, gpu: null },
          engines: [{ kind: 'llama.cpp', version: null, backend: 'cpu-fake' }],
          max_jobs: this.maxJobs,
          ...this.hello,
        } as NodeToServerFrame)
        this.heartbeat = setInterval(
          () => this.send({ type: 'heartbeat', busy_jobs: 0, max_jobs: this.maxJobs }),
          100,
        )
        resolve('open')
      })
      this.ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
    })
  }

  send(frame: NodeToServerFrame) {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame))
  }

  /** Stops heartbeats but keeps the socket open (a hung machine). */
  silence() {
    if (this.heartbeat) clearInterval(this.heartbeat)
  }

  kill() {
    this.silence()
    this.ws.terminate()
  }

  private onFrame(frame: ServerToNodeFrame) {
    this.frames.push(frame)
    if (frame.type === 'desired_state') {
      for (const m of frame.node_models) {
        this.send({
          type: 'model_status',
          node_model_id: m.id,
          is_downloaded: m.requested_download || m.requested_serving,
          download_progress: m.requested_download ? 100 : 0,
          is_serving: m.requested_serving,
          tokens_per_second: this.tokensPerSecondClaim,
          error_message: '',
        })
      }
    }
    if (frame.type === 'job_offer') void this.run(frame)
  }

  protected async run(job: JobOfferFrame) {
    this.jobs.push(job)
    if (this.onOffer) return this.onOffer(job)
    if (this.rejectNext > 0) {
      this.rejectNext--
      return this.send({ type: 'job_rejected', job_id: job.job_id, reason: 'No free job slot' })
    }
    if (this.script === 'reject')
      return this.send({ type: 'job_rejected', job_id: job.job_id, reason: 'No free job slot' })
    this.send({ type: 'job_accepted', job_id: job.job_id })
    if (this.script === 'fail')
      return this.send({ type: 'job_failed', job_id: job.job_id, error: this.failError })
    for (const [i, text] of this.chunks.entries()) {
      await new Promise((r) => setTimeout(r, this.chunkDelayMs))
      const tokens = this.chunkTokens?.[i]
      this.send({ type: 'job_chunk', job_id: job.job_id, text, ...(tokens ? { tokens } : {}) })
      if (this.script === 'hang' && i === 1) return
    }
    this.send({
      type: 'job_done',
      job_id: job.job_id,
      tokens_input: this.tokensInputReported,
      tokens_output: this.tokensOutputReported ?? this.chunks.length,
      processing_time_ms: 42,
    })
  }
}

/** Creates the node model record as the owner (like the web app) and waits until it serves. */
export async function serveModel(
  server: TestServer,
  owner: PocketBase,
  nodeId: string,
  modelId: string,
  waitMs = 5000,
) {
  const nm = await owner
    .collection('node_models')
    .create({ node: nodeId, model: modelId, requested_download: true, requested_serving: true })
  await waitUntil(
    async () => {
      const row = await server.core.database.db
        .selectFrom('node_models')
        .select('is_serving')
        .where('id', '=', nm.id)
        .executeTakeFirst()
      return Number(row?.is_serving) === 1
    },
    waitMs,
    'node model serving',
  )
  return nm.id
}

/**
 * Marks a node verified, as if it had passed its canaries (docs/verification.md): it is paid at
 * once instead of holding its earnings as pending. Tests of probation itself leave nodes new.
 */
export async function verifyNode(server: TestServer, nodeId: string) {
  await server.core.database.db
    .updateTable('nodes')
    .set({ verification: 'verified' })
    .where('id', '=', nodeId)
    .execute()
}

/**
 * A provider's node, linked through `server`, its socket on `socketServer` (another coordinator
 * process when scaled out), serving `modelId`; verified (an established provider, paid at once)
 * unless `probation`.
 */
export async function servingNode(
  server: TestServer,
  modelId: string,
  socketServer = server,
  maxJobs = 1,
  { probation = false } = {},
) {
  const owner = await signUp(server, 'owner')
  const make = (nodeId: string, credential: string) =>
    new FakeNode(socketServer, nodeId, credential, maxJobs)
  return linkedNode(server, modelId, owner, make, { probation })
}

/**
 * A node of `owner`'s, linked through `server` and serving `modelId`, verified unless `probation`;
 * `make` builds the fake node (FakeNode or a kind of its own) that connects as it.
 */
export async function linkedNode<Node extends FakeNode>(
  server: TestServer,
  modelId: string,
  owner: PocketBase,
  make: (nodeId: string, credential: string) => Node,
  { probation = false } = {},
) {
  const { nodeId, credential } = await linkNode(server, owner)
  if (!probation) await verifyNode(server, nodeId)
  const node = make(nodeId, credential)
  await node.connect()
  await serveModel(server, owner, nodeId, modelId)
  return { owner, node }
}
