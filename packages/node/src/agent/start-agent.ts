/**
 * @module start-agent
 * The node agent as a library: connect, say hello, heartbeat, follow the desired state of the
 * node's models and run jobs. Never prints; everything observable is an event.
 */
import { EventEmitter } from 'node:events'
import {
  NODE_PROTOCOL_VERSION,
  nodeAuthorizationHeader,
  type ModelStatusFrame,
  type NodeHardware,
  type ServerToNodeFrame,
} from '@meshwork/protocol'
import type { InferenceEngine } from '../inference/inference-engine.ts'
import { createLlamaEngine } from '../inference/llama-engine.ts'
import { createUpstreamEngine, type UpstreamEngineOptions } from '../inference/upstream-engine.ts'
import { modelsDirectory, resolveNodeHome } from '../node-home.ts'
import { AGENT_VERSION } from './agent-version.ts'
import { JobRunner, type JobEvent } from './job-runner.ts'
import { ModelManager } from './model-manager.ts'
import { NodeConnection, type CloseInfo } from './node-connection.ts'
import { probeHardware } from './probe-hardware.ts'
import { ScoreRunner } from './score-runner.ts'

export interface StartAgentOptions {
  /** Coordinator base URL, e.g. http://127.0.0.1:8090. */
  server: string
  nodeId: string
  credential: string
  /** Node home (models live in `<home>/models`); default from MESHWORK_NODE_HOME. */
  home?: string
  /** Jobs run at once (default 1). */
  maxJobs?: number
  /** llama.cpp threads per model; default 'auto' (see chooseThreads). */
  threads?: number | 'auto'
  gpu?: 'auto' | false
  /** Serve through an upstream OpenAI-compatible server instead of embedded llama.cpp. */
  upstream?: UpstreamEngineOptions
  /** A ready engine (tests, embedding); the agent does not dispose an engine it was given. */
  engine?: InferenceEngine
  heartbeatIntervalMs?: number
  initialBackoffMs?: number
  maxBackoffMs?: number
  progressIntervalMs?: number
  /** Automatic download retries: first and longest wait (default 5 s and 5 minutes). */
  downloadRetry?: { initialMs?: number; maxMs?: number }
}

/** Events of a running agent (EventEmitter names and argument tuples). */
export interface AgentEventMap {
  connected: [hardware: NodeHardware]
  /** The socket closed, or never opened (then `cause` says why: 'connection refused', ...). */
  disconnected: [info: CloseInfo]
  /** The coordinator refused the credential; the agent stops reconnecting. */
  unauthorized: [info: { status: number }]
  /** Another connection with this node's credential took its place; the agent stops reconnecting. */
  replaced: []
  desired_state: [nodeModelIds: string[]]
  model_status: [status: ModelStatusFrame]
  /** A model file on disk was not the catalogue's: removed, to be downloaded again. */
  model_file_removed: [nodeModelId: string, reason: string]
  job: [event: JobEvent]
  invalid_frame: [error: Error]
}

export interface RunningAgent {
  readonly events: EventEmitter<AgentEventMap>
  readonly connected: boolean
  /** Latest status of every node model the coordinator asked about. */
  statuses(): ModelStatusFrame[]
  /**
   * The catalogue name of a model, by node model id (model_status) or catalogue model id (jobs),
   * for log lines that name models rather than record ids; undefined when not (yet) known.
   */
  modelName(id: string): string | undefined
  /** Resolves when no model operation (download, load, ...) is in flight. */
  idle(): Promise<void>
  /**
   * Graceful shutdown (SIGTERM): takes no new jobs (the coordinator hears so at once), lets the
   * running ones finish until `deadlineMs`, then stops; jobs still running then are handed back
   * (the socket closes and the coordinator gives them to other nodes).
   */
  drain(deadlineMs: number): Promise<void>
  /** Closes the socket, aborts jobs and downloads (partial files stay), unloads models. */
  stop(): Promise<void>
}

/** Starts the agent; resolves once the hardware is probed and the first connect has begun. */
export async function startAgent(options: StartAgentOptions): Promise<RunningAgent> {
  const events = new EventEmitter<AgentEventMap>()
  const home = options.home ?? resolveNodeHome()
  const maxJobs = Math.max(1, options.maxJobs ?? 1)
  const ownsEngine = !options.engine
  const engine =
    options.engine ??
    (options.upstream
      ? createUpstreamEngine(options.upstream)
      : createLlamaEngine({ gpu: options.gpu, threads: options.threads, parallel: maxJobs }))
  const authorization = nodeAuthorizationHeader(options.nodeId, options.credential)
  const hardware = await probeHardware(engine)
  // Backend class and version: the coordinator judges this node's answers against them.
  const engineInfo = await engine.describe().catch(() => engine.info)

  const models = new ModelManager({
    modelsDir: modelsDirectory(home),
    engine,
    downloadUrl: (id) =>
      new URL(`/api/models/${encodeURIComponent(id)}/download`, options.server).toString(),
    downloadHeaders: { authorization },
    progressIntervalMs: options.progressIntervalMs,
    retryInitialMs: options.downloadRetry?.initialMs,
    retryMaxMs: options.downloadRetry?.maxMs,
    onStatus: (status) => {
      connection.send(status)
      events.emit('model_status', status)
    },
    onFileRemoved: (nodeModelId, reason) => events.emit('model_file_removed', nodeModelId, reason),
  })
  const jobs = new JobRunner({
    maxJobs,
    serving: (modelId) => models.serving(modelId),
    send: (frame) => connection.send(frame),
    onJobEvent: (event) => events.emit('job', event),
  })
  const scores = new ScoreRunner({
    serving: (modelId) => models.serving(modelId),
    send: (frame) => connection.send(frame),
  })
  const heartbeat = () =>
    connection.send({
      type: 'heartbeat',
      busy_jobs: jobs.busy,
      max_jobs: maxJobs,
      ...(jobs.draining ? { draining: true } : {}),
    })

  const onFrame = (frame: ServerToNodeFrame) => {
    switch (frame.type) {
      case 'desired_state':
        models.apply(frame.node_models)
        return events.emit(
          'desired_state',
          frame.node_models.map((m) => m.id),
        )
      case 'job_offer':
        return jobs.offer(frame)
      case 'job_cancel':
        return jobs.cancel(frame.job_id)
      case 'score_request':
        return scores.score(frame)
    }
  }

  const connection: NodeConnection = new NodeConnection({
    server: options.server,
    authorization,
    initialBackoffMs: options.initialBackoffMs,
    maxBackoffMs: options.maxBackoffMs,
    onOpen: () => {
      connection.send({
        type: 'hello',
        protocol_version: NODE_PROTOCOL_VERSION,
        agent_version: AGENT_VERSION,
        hardware,
        engines: [engineInfo],
        max_jobs: maxJobs,
      })
      heartbeat()
      for (const status of models.statuses()) connection.send(status)
      events.emit('connected', hardware)
    },
    onFrame,
    onClose: (info) => {
      // The coordinator hands a dropped node's jobs to another node: stop working on them here.
      jobs.abortAll().catch((err: unknown) => console.error('aborting jobs failed:', err))
      scores.abortAll()
      events.emit('disconnected', info)
    },
    onUnauthorized: (status) => events.emit('unauthorized', { status }),
    onReplaced: () => events.emit('replaced'),
    onInvalidFrame: (error) => events.emit('invalid_frame', error),
  })
  const timer = setInterval(heartbeat, options.heartbeatIntervalMs ?? 5000)
  let stopped: Promise<void> | null = null
  connection.start()

  return {
    events,
    get connected() {
      return connection.connected
    },
    statuses: () => models.statuses(),
    modelName: (id) => (models.modelOf(id) ?? models.catalogueModel(id))?.name,
    idle: () => models.idle(),
    async drain(deadlineMs: number) {
      jobs.draining = true
      heartbeat()
      await jobs.settled(Date.now() + deadlineMs)
      await stop()
    },
    stop,
  }

  function stop(): Promise<void> {
    stopped ??= stopOnce()
    return stopped
  }
  async function stopOnce() {
    clearInterval(timer)
    await connection.stop()
    await jobs.abortAll()
    scores.abortAll()
    await models.dispose()
    if (ownsEngine) await engine.dispose()
  }
}
