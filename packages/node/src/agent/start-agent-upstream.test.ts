import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ModelStatusFrame, NodeToServerFrame } from '@meshwork/protocol'
import { startFakeCoordinator, type FakeCoordinator } from '../test-support/fake-coordinator.ts'
import {
  FAKE_OPENAI_WORDS,
  startFakeOpenAiServer,
  type FakeOpenAiServer,
} from '../test-support/fake-openai-server.ts'
import { startAgent, type RunningAgent } from './start-agent.ts'

const auth = { nodeId: 'node_up', credential: 'c' }
const model = {
  id: 'mod_x',
  name: 'llama3.2:1b',
  file_name: 'x.gguf',
  file_size_bytes: 1000,
  sha256: 'c'.repeat(64),
}

describe('startAgent with an upstream OpenAI-compatible engine', () => {
  let coord: FakeCoordinator
  let upstream: FakeOpenAiServer
  let agent: RunningAgent
  let home = ''
  beforeAll(async () => {
    coord = await startFakeCoordinator({}, auth)
    upstream = await startFakeOpenAiServer()
    home = await mkdtemp(join(tmpdir(), 'mw-up-'))
  })
  afterAll(async () => {
    await agent?.stop()
    await coord.close()
    await upstream.close()
    await rm(home, { recursive: true, force: true })
  })

  it('serves without downloading and streams the upstream answer as job chunks', async () => {
    const hello = coord.waitFor((f) => f.type === 'hello')
    agent = await startAgent({ server: coord.url, ...auth, home, upstream: { url: upstream.url } })
    expect(await hello).toMatchObject({ engines: [{ kind: 'openai' }], hardware: { gpu: null } })

    const serving = coord.waitFor(
      (f: NodeToServerFrame): f is ModelStatusFrame => f.type === 'model_status' && f.is_serving,
    )
    coord.send({
      type: 'desired_state',
      node_models: [{ id: 'nm', model, requested_download: true, requested_serving: true }],
    })
    const s = await serving.catch((err) => {
      throw new Error(JSON.stringify(coord.frames.slice(-6)), { cause: err })
    })
    expect(s).toMatchObject({ is_downloaded: true, download_progress: 100, error_message: '' })
    expect(s.tokens_per_second).toBeGreaterThan(0)
    expect(coord.files.requests).toEqual([])
    expect(await readdir(home)).not.toContain('models')

    const done = coord.waitFor((f) => f.type === 'job_done')
    coord.send({
      type: 'job_offer',
      job_id: 'j',
      request_id: 'r',
      model_id: model.id,
      prompt: { messages: [{ role: 'user', content: 'hi' }] },
      sampling: {
        temperature: 0.7,
        top_p: 0.9,
        top_k: 40,
        repeat_penalty: 1.1,
        frequency_penalty: 0,
        presence_penalty: 0,
        max_tokens: 64,
        context_length: 8000,
      },
    })
    expect(await done).toMatchObject({ tokens_input: 7, tokens_output: 4 })
    const text = coord.frames
      .map((x) => x.frame)
      .flatMap((f) => (f.type === 'job_chunk' ? [f.text] : []))
      .join('')
    expect(text).toBe(FAKE_OPENAI_WORDS.join(''))
    expect(upstream.bodies.at(-1)).toMatchObject({ model: 'llama3.2:1b', max_tokens: 64 })
  })
})
