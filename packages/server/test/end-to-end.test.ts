/**
 * The whole network with real llama.cpp: nodes are @meshwork/node agents linked through the real
 * device flow, models come from the coordinator's mirror (../shared/models), chat goes over HTTP
 * and realtime through the SDK.
 */
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { LinkDeniedError, startAgent, type RunningAgent } from '@meshwork/node'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { postJson, waitUntil } from './support/network.ts'
import { setTrusted } from '../src/cli/node-trust.ts'
import { approveAs, linkNode, modelMirror as mirror, startTestAgent } from '@meshwork/test-kit'

const haveModels = existsSync(join(mirror, 'stories260K.gguf'))

describe.each(dialects)('[%s] end to end with llama.cpp', (dialect) => {
  let server: TestServer
  const agents: RunningAgent[] = []
  const agentsByNode = new Map<string, RunningAgent>()
  const homes: string[] = []

  beforeAll(async () => {
    if (!haveModels) throw new Error(`The test models are missing from ${mirror}`)
    server = await startTestServer(dialect, { modelMirror: mirror })
  })
  afterAll(async () => {
    for (const a of agents) await a.stop()
    await server?.stop()
    for (const h of homes) rmSync(h, { recursive: true, force: true })
  })

  /** Links a device the way `meshwork-node login` does, approving (or denying) as `owner`. */
  async function link(owner: PocketBase, device: string, decision: 'approve' | 'deny' = 'approve') {
    return linkNode(server.url, device, approveAs(server.url, owner.authStore.token, decision))
  }

  async function agentFor(owner: PocketBase, device: string) {
    const linked = await link(owner, device)
    // Stopped and cleaned up in afterAll, as agents restarted on the same home are.
    const { agent, home } = await startTestAgent(server.url, linked)
    homes.push(home)
    agents.push(agent)
    agentsByNode.set(linked.nodeId, agent)
    return { agent, nodeId: linked.nodeId, home, linked }
  }

  async function serve(owner: PocketBase, nodeId: string, model: string) {
    const progress: string[] = []
    const nm = await owner.collection('node_models').create({
      node: nodeId,
      model,
      requested_download: true,
      requested_serving: false,
      is_downloaded: false,
      is_serving: false,
      tokens_per_second: 0,
    })
    await owner
      .collection('node_models')
      .subscribe(nm.id, (e) => progress.push(String(e.record.download_progress)))
    await waitUntil(
      async () => (await owner.collection('node_models').getOne(nm.id)).is_downloaded,
      20_000,
      'download',
    )
    await owner.collection('node_models').update(nm.id, { requested_serving: true })
    const serving = await waitUntil(
      async () => {
        const r = await owner.collection('node_models').getOne(nm.id)
        return r.is_serving && r
      },
      30_000,
      'serving',
    )
    await owner.collection('node_models').unsubscribe(nm.id)
    return { id: nm.id, progress, serving }
  }

  it('links, downloads, serves, streams a chat answer and pays the node owner', async () => {
    const owner = await signUp(server, 'host')
    await expect(link(owner, 'Refused box', 'deny')).rejects.toBeInstanceOf(LinkDeniedError)

    const { nodeId } = await agentFor(owner, 'Stories box')
    const stories = await modelId(server)
    const { progress, serving } = await serve(owner, nodeId, stories)
    expect(progress.at(-1)).toBe('100')
    expect(serving.tokens_per_second).toBeGreaterThan(0)
    expect((await owner.collection('nodes').getOne(nodeId)).status).toBe('online')

    const pb = await signUp(server, 'reader')
    const conv = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: pb.authStore.record!.id, model: stories })
    const prompt = 'Once upon a time, there was a little dog'
    const partials: string[] = []
    let finish: (r: Record<string, unknown>) => void = () => {}
    const completed = new Promise<Record<string, unknown>>((r) => (finish = r))
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt, temperature: 0.7 },
      pb.authStore.token,
    )
    expect(sent.body).toMatchObject({ status: 'queued', position: 0 })
    const id = sent.body.request_id as string
    await pb.collection('requests').subscribe(id, (e) => {
      if (e.record.is_partial && e.record.response) partials.push(String(e.record.response))
      if (e.record.status === 'completed' || e.record.status === 'failed') finish(e.record)
    })
    const final = await completed
    expect(final.status).toBe('completed')
    expect(partials.length).toBeGreaterThan(1)
    expect(String(final.response).length).toBeGreaterThan(partials[0].length)
    expect(final.response).toMatch(/\w/)
    // The coordinator has stories260K in its mirror: input is counted with its own tokenizer.
    const llama = await getLlama({
      build: 'never',
      gpu: false,
      logLevel: LlamaLogLevel.error,
      logger: () => {},
    })
    const vocab = await llama.loadModel({
      modelPath: join(mirror, 'stories260K.gguf'),
      vocabOnly: true,
    })
    expect(final).toMatchObject({
      is_partial: false,
      node: nodeId,
      tokens_input: vocab.tokenize(prompt).length,
    })
    // Billed: no more than the text's own tokens (nor the node's, which spell it).
    expect(final.tokens_output).toBeGreaterThan(0)
    expect(final.tokens_output).toBeLessThanOrEqual(vocab.tokenize(String(final.response)).length)
    expect(final.tokens_output).toBeGreaterThan(0)
    expect(final.processing_time_ms).toBeGreaterThan(0)

    const cost = (Number(final.tokens_input) + Number(final.tokens_output)) * 1
    const debits = await pb
      .collection('user_credit_txs')
      .getFullList({ filter: `type = "debit_inference_request"` })
    expect(debits).toMatchObject([{ amount: cost, request: id, balance_after: 1000 - cost }])
    // A new node is on probation: its owner's earning is pending, on the balance and the node.
    expect(await owner.collection('user_balances').getFirstListItem('')).toMatchObject({
      balance: 1000,
      pending_earnings: cost,
      total_earned: 0,
    })
    expect(await owner.collection('nodes').getOne(nodeId)).toMatchObject({
      verification: 'probation',
      pending_earnings: cost,
    })
    // The operator vouches for it (admin trust): the pending earning is paid.
    await setTrusted(server.core.database.db, nodeId, true)
    const credits = await waitUntil(
      () =>
        owner
          .collection('user_credit_txs')
          .getFullList({ filter: `type = "credit_inference_request"` })
          .then((l) => l.length && l),
      5000,
      'credit',
    )
    expect(credits).toMatchObject([{ amount: cost, request: id, balance_after: 1000 + cost }])
    expect(await owner.collection('user_balances').getFirstListItem('')).toMatchObject({
      balance: 1000 + cost,
      pending_earnings: 0,
      total_earned: cost,
    })
    const balance = await pb.collection('user_balances').getFirstListItem('')
    expect(balance).toMatchObject({ balance: 1000 - cost, total_spent: cost })
    await pb.collection('requests').unsubscribe()
  })

  it('serves a second model on a second node; node_count follows nodes going on and off', async () => {
    const owner = await signUp(server, 'second')
    const tiny = await modelId(server, 'llama-2-tiny-random')
    const pb = await signUp(server, 'observer')
    const count = async () => (await pb.collection('available_models').getOne(tiny)).node_count
    expect(await count()).toBe(0)
    const { agent, nodeId, home, linked } = await agentFor(owner, 'Tiny box')
    await serve(owner, nodeId, tiny)
    expect(await count()).toBe(1)

    const conv = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: pb.authStore.record!.id })
    const prompt = 'Say something random please'
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: tiny, prompt },
      pb.authStore.token,
    )
    const id = sent.body.request_id as string
    const done = await waitUntil(
      async () => {
        const r = await pb.collection('requests').getOne(id)
        return r.status === 'completed' && r
      },
      20_000,
      'tiny completed',
    )
    const debits = await pb
      .collection('user_credit_txs')
      .getFullList({ filter: `type = "debit_inference_request"` })
    expect(debits[0].amount).toBe((done.tokens_input + done.tokens_output) * 2)

    await agent.stop()
    agents.splice(agents.indexOf(agent), 1)
    await waitUntil(async () => (await count()) === 0, 5000, 'count 0')
    const back = await startAgent({
      server: server.url,
      nodeId,
      credential: linked.credential,
      home,
      threads: 1,
      gpu: false,
      heartbeatIntervalMs: 1000,
    })
    agents.push(back)
    await waitUntil(async () => (await count()) === 1, 20_000, 'count 1')
  })

  it('finishes a job on another node when its node is stopped mid-stream, charging once', async () => {
    const stories = await modelId(server)
    // Attempts for one request go to nodes of different owners: the spare is someone else's.
    const spareOwner = await signUp(server, 'spare')
    const { nodeId: spare } = await agentFor(spareOwner, 'Spare box')
    await serve(spareOwner, spare, stories)
    const pb = await signUp(server, 'patient')
    const conv = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: pb.authStore.record!.id })
    let firstNode = ''
    let resolvePartial: () => void = () => {}
    const partial = new Promise<void>((r) => (resolvePartial = r))
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conv.id, model_id: stories, prompt: 'The cat sat' },
      pb.authStore.token,
    )
    const id = sent.body.request_id as string
    await pb.collection('requests').subscribe(id, (e) => {
      if (e.record.is_partial && e.record.response && !firstNode) {
        firstNode = String(e.record.node)
        resolvePartial()
      }
    })
    await partial
    const victim = agentsByNode.get(firstNode)!
    await victim.stop()
    agents.splice(agents.indexOf(victim), 1)
    const done = await waitUntil(
      async () => {
        const r = await pb.collection('requests').getOne(id)
        return (r.status === 'completed' || r.status === 'failed') && r
      },
      20_000,
      'finished',
    )
    expect(done.status).toBe('completed')
    expect(done.node).not.toBe(firstNode)
    const debits = await pb
      .collection('user_credit_txs')
      .getFullList({ filter: `type = "debit_inference_request"` })
    expect(debits).toHaveLength(1)
    expect(debits[0].amount).toBe(done.tokens_input + done.tokens_output)
    await pb.collection('requests').unsubscribe()
  })
})
