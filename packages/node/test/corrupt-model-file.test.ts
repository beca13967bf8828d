/**
 * The agent, with real llama.cpp, finds a model file of the catalogue's size but other content in
 * its home (a disk that rotted, a kill mid-write, a tampered file): it must not serve it (the
 * coordinator's canaries would bench the node), but download the catalogue's file and serve that.
 */
import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import type { ModelStatusFrame, NodeToServerFrame } from '@meshwork/protocol'
import { startAgent } from '../src/agent/start-agent.ts'
import { startFakeCoordinator } from '../src/test-support/fake-coordinator.ts'

const MODELS = new URL('../../../../shared/models/', import.meta.url).pathname
const auth = { nodeId: 'node1', credential: 'secret-cred' }
const stories = {
  id: 'mod_stories',
  name: 'stories260K',
  file_name: 'stories260K.gguf',
  file_size_bytes: 1185376,
  sha256: '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d',
}
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

it('replaces a right-size file of other content before serving, and answers with the real model', async () => {
  const good = await readFile(`${MODELS}stories260K.gguf`)
  const coord = await startFakeCoordinator({ '/api/models/mod_stories/download': good }, auth)
  const home = await mkdtemp(join(tmpdir(), 'mw-corrupt-'))
  // The header and vocabulary intact, the last weights changed: it still loads, as another model.
  const rotten = Buffer.from(good)
  for (let i = rotten.length - 65536; i < rotten.length; i++) rotten[i] ^= 0x5a
  await mkdir(join(home, 'models'))
  await writeFile(join(home, 'models', stories.file_name), rotten)
  const agent = await startAgent({
    server: coord.url,
    ...auth,
    home,
    threads: 1,
    gpu: false,
    progressIntervalMs: 0,
    initialBackoffMs: 50,
  })
  try {
    await coord.waitFor((f) => f.type === 'hello')
    const serving = coord.waitFor(
      (f: NodeToServerFrame): f is ModelStatusFrame => f.type === 'model_status' && f.is_serving,
      30_000,
    )
    coord.send({
      type: 'desired_state',
      node_models: [
        { id: 'nm1', model: stories, requested_download: true, requested_serving: true },
      ],
    })
    await serving
    expect(coord.files.requests.filter((r) => r.url.endsWith('/download'))).toHaveLength(1)
    const onDisk = await readFile(join(home, 'models', stories.file_name))
    expect(sha256(onDisk)).toBe(stories.sha256)
    expect((await readdir(join(home, 'models'))).sort()).toEqual([
      '.stories260K.gguf.sha256',
      'stories260K.gguf',
    ])

    const done = coord.waitFor((f) => f.type === 'job_done' && f.job_id === 'j1')
    coord.send({
      type: 'job_offer',
      job_id: 'j1',
      request_id: 'req_j1',
      model_id: stories.id,
      prompt: { messages: [{ role: 'user', content: 'Tell me a story about a dog.' }] },
      sampling: {
        temperature: 0,
        top_p: 1,
        top_k: 1,
        repeat_penalty: 1,
        frequency_penalty: 0,
        presence_penalty: 0,
        max_tokens: 20,
        context_length: 8000,
      },
    })
    expect(await done).toMatchObject({ type: 'job_done' })
  } finally {
    await agent.stop()
    await coord.close()
    await rm(home, { recursive: true, force: true })
  }
})
