import { readFile, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type {
  DesiredNodeModel,
  JobOfferFrame,
  ModelStatusFrame,
  NodeToServerFrame,
} from '@meshwork/protocol'
import { startFakeCoordinator, type FakeCoordinator } from '../test-support/fake-coordinator.ts'
import { startAgent, type RunningAgent } from './start-agent.ts'

const MODELS = new URL('../../../../../shared/models/', import.meta.url).pathname
const auth = { nodeId: 'node1', credential: 'secret-cred' }
const stories = {
  id: 'mod_stories',
  name: 'stories260K',
  file_name: 'stories260K.gguf',
  file_size_bytes: 1185376,
  sha256: '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d',
}
const random = {
  id: 'mod_random',
  name: 'tiny-random',
  file_name: 'llama-2-tiny-random.gguf',
  file_size_bytes: 1750560,
  sha256: '81f226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb',
}
const sampling = {
  temperature: 0.8,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 30,
  context_length: 8000,
}
const offer = (job_id: string, extra: Partial<JobOfferFrame> = {}): JobOfferFrame => ({
  type: 'job_offer',
  job_id,
  request_id: `req_${job_id}`,
  model_id: stories.id,
  prompt: { messages: [{ role: 'user', content: 'Tell me a story about a dog.' }] },
  sampling,
  ...extra,
})
const status =
  (id: string, pred: (s: ModelStatusFrame) => boolean) =>
  (f: NodeToServerFrame): f is ModelStatusFrame =>
    f.type === 'model_status' && f.node_model_id === id && pred(f)
const of = (jobId: string, type: NodeToServerFrame['type']) => (f: NodeToServerFrame) =>
  f.type === type && 'job_id' in f && f.job_id === jobId

describe('startAgent against a fake coordinator', () => {
  let coord: FakeCoordinator
  let agent: RunningAgent
  let home = ''
  let desired: DesiredNodeModel[] = []
  const setDesired = (list: DesiredNodeModel[]) => {
    desired = list
    coord.send({ type: 'desired_state', node_models: desired })
  }

  beforeAll(async () => {
    coord = await startFakeCoordinator(
      {
        '/api/models/mod_stories/download': await readFile(`${MODELS}stories260K.gguf`),
        '/api/models/mod_random/download': await readFile(`${MODELS}llama-2-tiny-random.gguf`),
      },
      auth,
    )
    home = await mkdtemp(join(tmpdir(), 'mw-agent-'))
  })
  afterAll(async () => {
    await agent?.stop()
    await coord.close()
    await rm(home, { recursive: true, force: true })
  })

  it('says hello, then downloads, serves and answers a job with streamed chunks', async () => {
    const hello = coord.waitFor((f) => f.type === 'hello')
    agent = await startAgent({
      server: coord.url,
      ...auth,
      home,
      threads: 1,
      gpu: false,
      heartbeatIntervalMs: 200,
      progressIntervalMs: 0,
      initialBackoffMs: 50,
    })
    const h = await hello
    expect(h).toMatchObject({
      protocol_version: 2,
      max_jobs: 1,
      engines: [
        {
          kind: 'llama.cpp',
          version: expect.stringMatching(/^node-llama-cpp \d/),
          backend: expect.stringMatching(/^cpu/),
        },
      ],
    })
    await coord.waitFor((f) => f.type === 'heartbeat' && f.busy_jobs === 0)

    const downloaded = coord.waitFor(status('nm1', (s) => s.is_downloaded))
    setDesired([{ id: 'nm1', model: stories, requested_download: true, requested_serving: false }])
    expect(await downloaded).toMatchObject({ download_progress: 100, error_message: '' })
    expect((await stat(join(home, 'models', 'stories260K.gguf'))).size).toBe(1185376)
    expect(coord.files.requests.at(-1)!.headers.authorization).toBe('Bearer node1.secret-cred')

    const serving = coord.waitFor(status('nm1', (s) => s.is_serving))
    setDesired([{ ...desired[0], requested_serving: true }])
    expect((await serving).tokens_per_second).toBeGreaterThan(0)

    const done = coord.waitFor(of('j1', 'job_done'))
    coord.send(offer('j1'))
    const result = await done
    const jobFrames = coord.frames
      .map((x) => x.frame)
      .filter((f) => 'job_id' in f && f.job_id === 'j1')
    expect(jobFrames[0].type).toBe('job_accepted')
    const chunks = jobFrames.filter((f) => f.type === 'job_chunk')
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.map((c) => (c.type === 'job_chunk' ? c.text : '')).join('')).toMatch(/\w+ \w+/)
    expect(result).toMatchObject({ type: 'job_done' })
    if (result.type !== 'job_done') throw new Error('unreachable')
    expect(result.tokens_output).toBeGreaterThan(0)
    // Every chunk carries the ids of its tokens; together they are the output the node counted.
    const ids = chunks.flatMap((c) => (c.type === 'job_chunk' ? (c.tokens ?? []) : []))
    expect(chunks.every((c) => c.type === 'job_chunk' && Array.isArray(c.tokens))).toBe(true)
    expect(ids).toHaveLength(result.tokens_output)
    expect(result.tokens_input).toBeGreaterThan(5)
    expect(result.processing_time_ms).toBeGreaterThanOrEqual(0)
  })

  it('rejects offers it cannot run and stops a cancelled job without a result', async () => {
    const rejected = coord.waitFor(of('j2', 'job_rejected'))
    coord.send(offer('j2', { model_id: 'mod_unknown' }))
    expect(await rejected).toMatchObject({ reason: 'Model is not being served by this node' })

    const firstChunk = coord.waitFor(of('j3', 'job_chunk'))
    coord.send(offer('j3', { sampling: { ...sampling, max_tokens: 1500 } }))
    await firstChunk
    const idleBeat = coord.waitFor((f) => f.type === 'heartbeat' && f.busy_jobs === 0)
    coord.send({ type: 'job_cancel', job_id: 'j3' })
    await idleBeat
    const after = coord.frames.filter(
      (x) => 'job_id' in x.frame && x.frame.job_id === 'j3' && /done|failed/.test(x.frame.type),
    )
    expect(after).toEqual([])
  })

  it('reconnects after the coordinator drops the socket and reports its models again', async () => {
    const before = coord.connections
    const hello = coord.waitFor((f) => f.type === 'hello')
    const again = coord.waitFor(status('nm1', (s) => s.is_serving))
    coord.drop()
    await hello
    await again
    expect(coord.connections).toBe(before + 1)
    expect(agent.connected).toBe(true)
  })

  it('cancels a download in flight and cleans up, deletes a model on request', async () => {
    coord.files.setPieceDelay(100)
    const progressing = coord.waitFor(status('nm2', (s) => s.download_progress > 0))
    setDesired([
      desired[0],
      { id: 'nm2', model: random, requested_download: true, requested_serving: false },
    ])
    await progressing
    const reset = coord.waitFor(status('nm2', (s) => s.download_progress === 0))
    setDesired([desired[0], { ...desired[1], requested_download: false }])
    await reset
    await agent.idle()
    coord.files.setPieceDelay(0)
    await expect(stat(join(home, 'models', 'llama-2-tiny-random.gguf.part'))).rejects.toThrow()
    await expect(stat(join(home, 'models', 'llama-2-tiny-random.gguf'))).rejects.toThrow()

    const stopped = coord.waitFor(status('nm1', (s) => !s.is_serving))
    setDesired([{ ...desired[0], requested_serving: false }, desired[1]])
    await stopped
    const deleted = coord.waitFor(status('nm1', (s) => !s.is_downloaded))
    setDesired([{ ...desired[0], requested_download: false }, desired[1]])
    await deleted
    await agent.idle()
    await expect(stat(join(home, 'models', 'stories260K.gguf'))).rejects.toThrow()
  })

  it('reports a checksum mismatch in error_message', async () => {
    const failed = coord.waitFor(status('nm3', (s) => s.error_message !== ''))
    setDesired([
      {
        id: 'nm3',
        model: { ...random, sha256: 'b'.repeat(64) },
        requested_download: true,
        requested_serving: false,
      },
    ])
    const s = await failed
    expect(s.error_message).toMatch(/Checksum mismatch/)
    expect(s.is_downloaded).toBe(false)
  })

  it('stops reconnecting when the coordinator refuses the credential', async () => {
    const other = await startAgent({
      server: coord.url,
      nodeId: 'node1',
      credential: 'wrong',
      home,
      gpu: false,
      engine: {
        info: { kind: 'openai', version: null, backend: 'upstream' },
        needsModelFile: false,
        load: () => Promise.reject(new Error('x')),
        describeGpu: async () => null,
        describe: async () => ({ kind: 'openai', version: null, backend: 'upstream' }),
        dispose: async () => {},
      },
    })
    const refused = await new Promise<{ status: number }>((r) =>
      other.events.once('unauthorized', r),
    )
    expect(refused.status).toBe(401)
    await other.stop()
  })
})

describe('startAgent draining (SIGTERM)', () => {
  it('takes no new job, finishes the running one, then closes', async () => {
    const coord = await startFakeCoordinator(
      { '/api/models/mod_stories/download': await readFile(`${MODELS}stories260K.gguf`) },
      auth,
    )
    const home = await mkdtemp(join(tmpdir(), 'mw-agent-drain-'))
    const agent = await startAgent({
      server: coord.url,
      ...auth,
      home,
      threads: 1,
      gpu: false,
      heartbeatIntervalMs: 200,
      progressIntervalMs: 0,
      initialBackoffMs: 50,
    })
    try {
      await coord.waitFor((f) => f.type === 'hello')
      const serving = coord.waitFor(status('nd1', (s) => s.is_serving))
      coord.send({
        type: 'desired_state',
        node_models: [
          { id: 'nd1', model: stories, requested_download: true, requested_serving: true },
        ],
      })
      await serving
      const firstChunk = coord.waitFor(of('d1', 'job_chunk'))
      coord.send(offer('d1', { sampling: { ...sampling, max_tokens: 200 } }))
      await firstChunk
      const said = coord.waitFor((f) => f.type === 'heartbeat' && f.draining === true)
      const drained = agent.drain(120_000)
      await said
      const rejected = coord.waitFor(of('d2', 'job_rejected'))
      coord.send(offer('d2'))
      expect(await rejected).toMatchObject({ reason: 'No free job slot' })
      await drained
      // The running job finished before the socket closed; the agent does not reconnect.
      expect(coord.frames.some((x) => of('d1', 'job_done')(x.frame))).toBe(true)
      expect(agent.connected).toBe(false)
    } finally {
      await agent.stop()
      await coord.close()
      await rm(home, { recursive: true, force: true })
    }
  })
})
