/**
 * Hostile nodes (issue 13, points 2, 3 and 9): fake nodes that speak the node protocol over the
 * real WebSocket, linked through the real device flow, each trying one attack. Every attack gains
 * nothing, the user pays at most for what was streamed, and the ledger holds afterwards. Run with
 * the coordinator's own tokenizer (the model files are in its mirror) and without (byte bound).
 */
import WebSocket from 'ws'
import type PocketBase from 'pocketbase'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { NODE_WS_PATH, nodeAuthorizationHeader } from '@meshwork/protocol'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId, updateAsServer } from './fixtures.ts'
import { FakeNode, linkNode, postJson, servingNode as serve, waitUntil } from './support/network.ts'
import { expectAuditPasses, txsOf } from './support/ledger.ts'
import { setTrusted } from '../src/cli/node-trust.ts'
import { byteRule, CALIBRATION_MIN_TOKENS } from '../src/core/metering/calibration.ts'
import { modelMirror as mirror } from '@meshwork/test-kit'

const BUDGET = 40

const cases = dialects.flatMap((dialect) => [
  { dialect, metering: 'tokenizer' as const },
  { dialect, metering: 'byte bound' as const },
])

describe.each(cases)('[$dialect] hostile nodes, metered by $metering', ({ dialect, metering }) => {
  let server: TestServer
  let stories: string
  let vocab: Awaited<ReturnType<Awaited<ReturnType<typeof getLlama>>['loadModel']>>

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      metering === 'tokenizer' ? { modelMirror: mirror } : {},
      {
        network: {
          scheduler: { stallMs: 1500, offerTimeoutMs: 1500, probationShare: 0 },
          maxOutputTokens: BUDGET,
          // Without a mirror the coordinator has no model file: the byte bound meters.
          ...(metering === 'byte bound' ? { modelDirs: [] } : {}),
        },
      },
    )
    stories = await modelId(server)
    const llama = await getLlama({
      build: 'never',
      gpu: false,
      logLevel: LlamaLogLevel.error,
      logger: () => {},
    })
    vocab = await llama.loadModel({ modelPath: `${mirror}stories260K.gguf`, vocabOnly: true })
  })
  afterAll(async () => {
    await server?.stop()
  })
  // Each attack has the network to itself: its nodes go away with it.
  let nodes: FakeNode[] = []
  const servingNode = async (...args: Parameters<typeof serve>) => {
    const s = await serve(...args)
    nodes.push(s.node)
    return s
  }
  afterEach(async () => {
    for (const n of nodes) n.kill()
    const ids = nodes.map((n) => n.nodeId)
    nodes = []
    await waitUntil(() => ids.every((id) => !server.network.registry.get(id)), 5000, 'nodes gone')
  })

  const db = () => server.core.database.db
  const userId = (pb: PocketBase) => pb.authStore.record!.id
  const conversation = async (pb: PocketBase) =>
    (await pb.collection('conversations').create({ title: 'New Chat', user: userId(pb) })).id
  const request = (id: string) =>
    db().selectFrom('requests').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  const ended = (id: string, timeoutMs = 10_000) =>
    waitUntil(
      async () => {
        const r = await request(id)
        return (r.status === 'completed' || r.status === 'failed') && r
      },
      timeoutMs,
      'request ended',
    )
  /** The user's ledger rows of one type, as the API shows them (credits). */
  const txs = async (user: string, type: string) =>
    (await txsOf(server, user)).filter((t) => t.type === type)
  const ask = async (pb: PocketBase, prompt = 'Tell me a story', conv?: string) => {
    const sent = await postJson(
      server,
      '/api/chat/send',
      { conversation_id: conv ?? (await conversation(pb)), model_id: stories, prompt },
      pb.authStore.token,
    )
    expect(sent.status).toBe(200)
    return sent.body.request_id as string
  }
  /** What the coordinator can count in a text at most: tokens (tokenizer) or UTF-8 bytes. */
  const countable = (text: string) =>
    metering === 'tokenizer' ? vocab.tokenize(text).length : Buffer.byteLength(text)

  it('over-reported token counts: the user pays for what was streamed, not for the claim', async () => {
    const { owner, node } = await servingNode(server, stories)
    node.chunks = ['Hi', '.']
    node.tokensOutputReported = BUDGET // the whole budget for two characters
    const pb = await signUp(server, 'payer')
    const prompt = 'Tell me a story'
    const id = await ask(pb, prompt)
    const done = await ended(id)
    expect(done.status).toBe('completed')
    expect(done.response).toBe('Hi.')
    expect(Number(done.tokens_output)).toBeLessThanOrEqual(countable('Hi.'))
    expect(Number(done.tokens_output)).toBeLessThan(BUDGET)
    const debit = await txs(userId(pb), 'debit_inference_request')
    const credit = await txs(userId(owner), 'credit_inference_request')
    const cost = Number(done.tokens_input) + Number(done.tokens_output)
    expect(debit.map((t) => Number(t.amount))).toEqual([cost])
    expect(credit.map((t) => Number(t.amount))).toEqual([cost])
    // Input is what the prompt's text really is: the tokenizer's count, or the spec's estimate.
    expect(Number(done.tokens_input)).toBe(
      metering === 'tokenizer' ? vocab.tokenize(prompt).length : Math.floor(prompt.length / 4),
    )
    await expectAuditPasses(server)
    node.kill()
  })

  it('a 1 MB answer for a small budget: stored and billed at most the budget, and cheap as history', async () => {
    const { owner, node } = await servingNode(server, stories)
    const piece = 'Once upon a time there was a very long story. '.repeat(1300) // ~60 KB
    node.chunks = Array.from({ length: 18 }, () => piece) // ~1 MB in all
    node.chunkDelayMs = 1
    node.tokensOutputReported = 1
    const pb = await signUp(server, 'reader')
    const conv = await conversation(pb)
    const id = await ask(pb, 'Tell me a story', conv)
    const done = await ended(id)
    expect(done.status).toBe('completed')
    const stored = String(done.response)
    expect(piece.startsWith(stored.slice(0, 100))).toBe(true)
    // Cut at the budget: the tokenizer's count, or 32 bytes a token without one.
    if (metering === 'tokenizer') expect(vocab.tokenize(stored).length).toBeLessThanOrEqual(BUDGET)
    else expect(Buffer.byteLength(stored)).toBeLessThanOrEqual(BUDGET * 32)
    // The node claimed one token: that is all it is paid.
    expect(Number(done.tokens_output)).toBe(1)
    const credit = await txs(userId(owner), 'credit_inference_request')
    expect(credit.map((t) => Number(t.amount))).toEqual([Number(done.tokens_input) + 1])

    // The next message carries the stored answer as history, counted as what it really is.
    node.chunks = ['Yes.']
    node.tokensOutputReported = null
    const next = await ask(pb, 'More', conv)
    const second = await ended(next)
    expect(second.status).toBe('completed')
    const history = 'Tell me a story' + stored + 'More'
    if (metering === 'tokenizer') {
      const parts = ['Tell me a story', stored, 'More'].map((t) => vocab.tokenize(t).length)
      expect(Number(second.tokens_input)).toBe(parts[0] + parts[1] + parts[2])
      expect(parts[1]).toBeLessThanOrEqual(BUDGET)
    } else {
      expect(Number(second.tokens_input)).toBe(Math.floor(history.length / 4))
      expect(history.length).toBeLessThan(BUDGET * 32 + 100)
    }
    await expectAuditPasses(server)
    node.kill()
  })

  it('claimed 1e9 tokens/s: routing follows measured speed; the claim stays with the owner', async () => {
    const liar = await servingNode(server, stories)
    liar.node.tokensPerSecondClaim = 1e9
    await liar.node.connect() // reconnect: the claim goes out again with a new model_status
    const honest = await servingNode(server, stories)
    liar.node.chunks = Array.from({ length: 12 }, (_, i) => `word${i} `)
    honest.node.chunks = liar.node.chunks
    liar.node.chunkDelayMs = 150
    honest.node.chunkDelayMs = 5
    await waitUntil(
      async () => {
        const nm = await db()
          .selectFrom('node_models')
          .select('tokens_per_second')
          .where('node', '=', liar.node.nodeId)
          .executeTakeFirst()
        return Number(nm?.tokens_per_second) === 1e9
      },
      5000,
      'claim stored',
    )
    const pb = await signUp(server, 'router')
    // Two at once: each node gets one and is measured.
    const warm = await Promise.all([ask(pb), ask(pb)])
    for (const id of warm) expect((await ended(id)).status).toBe('completed')
    const speed = async (node: FakeNode) =>
      Number(
        (
          await db()
            .selectFrom('node_models')
            .select('measured_tokens_per_second')
            .where('node', '=', node.nodeId)
            .executeTakeFirstOrThrow()
        ).measured_tokens_per_second,
      )
    expect(await speed(honest.node)).toBeGreaterThan(await speed(liar.node))
    expect(await speed(liar.node)).toBeLessThan(1000)
    const liarJobs = liar.node.jobs.length
    for (let i = 0; i < 4; i++) expect((await ended(await ask(pb))).node).toBe(honest.node.nodeId)
    expect(liar.node.jobs.length).toBe(liarJobs)
    // Another user sees the measured speed, not the claim; the owner sees the claim as reported.
    const seen = await pb.collection('node_models').getFirstListItem(`node = "${liar.node.nodeId}"`)
    expect(seen.tokens_per_second).toBeUndefined()
    expect(seen.measured_tokens_per_second).toBe(await speed(liar.node))
    const own = await liar.owner
      .collection('node_models')
      .getFirstListItem(`node = "${liar.node.nodeId}"`)
    expect(own.tokens_per_second).toBe(1e9)
    await expectAuditPasses(server)
    liar.node.kill()
    honest.node.kill()
  })

  it('throw-away nodes failing every job: requests complete elsewhere, the failers are benched', async () => {
    const honest = await servingNode(server, stories)
    // Verified earlier (canaries are shown in canary.test.ts); the throw-away nodes are new.
    await updateAsServer(server, 'nodes', honest.node.nodeId, { verification: 'verified' })
    const pb = await signUp(server, 'victim')
    // The honest node has done work before; the throw-away nodes are new (three owners).
    expect((await ended(await ask(pb))).status).toBe('completed')
    const failers = await Promise.all(
      [0, 1, 2].map(() => servingNode(server, stories, server, 1, { probation: true })),
    )
    for (const f of failers) f.node.script = 'fail'
    // Worst case for the victim: every first attempt goes to a throw-away node.
    server.network.scheduler['options'].probationShare = 1
    try {
      for (let i = 0; i < 10; i++) {
        const done = await ended(await ask(pb))
        expect(done.status).toBe('completed')
        expect(done.node).toBe(honest.node.nodeId)
      }
    } finally {
      server.network.scheduler['options'].probationShare = 0
    }
    for (const f of failers) {
      const row = await db()
        .selectFrom('nodes')
        .selectAll()
        .where('id', '=', f.node.nodeId)
        .executeTakeFirstOrThrow()
      expect(Number(row.reputation_score)).toBeLessThan(5)
      expect(String(row.benched_until) > new Date().toISOString().replace('T', ' ')).toBe(true)
      expect(f.node.jobs.length).toBeLessThanOrEqual(3)
      expect(await txs(userId(f.owner), 'credit_inference_request')).toHaveLength(0)
    }
    expect(await txs(userId(pb), 'debit_inference_request')).toHaveLength(11)
    await expectAuditPasses(server)
    for (const f of failers) f.node.kill()
    honest.node.kill()
  })

  it("phishing text in job_failed reaches the node's owner only, never the user", async () => {
    const phish =
      'Your account is locked! Log in at http://evil.example/meshwork to keep your credits'
    const { owner, node } = await servingNode(server, stories)
    node.script = 'fail'
    node.failError = phish
    const pb = await signUp(server, 'target')
    const events: string[] = []
    await pb.collection('requests').subscribe('*', (e) => events.push(JSON.stringify(e.record)))
    const done = await ended(await ask(pb))
    expect(done.status).toBe('failed')
    expect(String(done.error_message)).not.toContain('evil')
    expect(String(done.error_message)).toMatch(/^No node is available/)
    const seen = await pb.collection('requests').getOne(String(done.id))
    expect(JSON.stringify(seen)).not.toContain('evil')
    expect(events.join('')).not.toContain('evil')
    const ownView = await owner.collection('nodes').getOne(node.nodeId)
    expect(String(ownView.last_error)).toContain(phish)
    const othersView = await pb.collection('nodes').getOne(node.nodeId)
    expect(othersView.last_error).toBeUndefined()
    await pb.collection('requests').unsubscribe()
    await expectAuditPasses(server)
    node.kill()
  })

  it("without a tokenizer, the byte bound is calibrated from a reference node's own counts", async () => {
    if (metering === 'tokenizer') return // the tokenizer counts; no bound to calibrate
    const pb = await signUp(server, 'calibrated')
    const text60 = 'a cat sat. '.repeat(6).slice(0, 60) // 60 bytes
    const overclaim = async () => {
      const { node } = await servingNode(server, stories)
      node.chunks = [text60]
      node.tokensOutputReported = BUDGET
      const done = await ended(await ask(pb))
      node.kill()
      await waitUntil(() => !server.network.registry.get(node.nodeId), 5000, 'gone')
      return Number(done.tokens_output)
    }
    // Uncalibrated: one token per byte at most, so the claim (40) stands against 60 bytes.
    expect(await overclaim()).toBe(BUDGET)
    // A reference (trusted) node answers at 4 bytes per token, by its own count, 2,000 tokens' worth.
    const reference = await servingNode(server, stories)
    await setTrusted(server.core.database.db, reference.node.nodeId, true)
    reference.node.chunks = ['abcd'.repeat(BUDGET)]
    reference.node.tokensOutputReported = BUDGET
    let payer = pb
    for (let i = 0; i < Math.ceil(CALIBRATION_MIN_TOKENS / BUDGET); i++) {
      if (i % 15 === 14) payer = await signUp(server, 'calibrating') // 1,000 credits each
      expect((await ended(await ask(payer))).node).toBe(reference.node.nodeId)
    }
    expect(await byteRule(db(), stories)).toEqual({ minBytesPerToken: 3, maxBytesPerToken: 8 })
    reference.node.kill()
    await waitUntil(() => !server.network.registry.get(reference.node.nodeId), 5000, 'gone')
    // Now 60 bytes are worth at most 60 / 3 = 20 tokens, whatever the node claims.
    expect(await overclaim()).toBe(20)
    await expectAuditPasses(server)
  }, 120_000)

  it('unbounded hello strings are refused: the node gets no jobs and nothing is stored', async () => {
    const owner = await signUp(server, 'verbose')
    const { nodeId, credential } = await linkNode(server, owner)
    const node = new FakeNode(server, nodeId, credential)
    nodes.push(node)
    node.hello = {
      agent_version: 'x'.repeat(1_000_000),
      hardware: {
        cpu_model: 'y'.repeat(100_000),
        cpu_cores: 1,
        memory_bytes: 1,
        gpu: 'z'.repeat(100_000),
      },
    }
    await node.connect()
    const nm = await owner
      .collection('node_models')
      .create({ node: nodeId, model: stories, requested_download: true, requested_serving: true })
    await waitUntil(
      async () => {
        const row = await db()
          .selectFrom('node_models')
          .select('is_serving')
          .where('id', '=', nm.id)
          .executeTakeFirst()
        return Number(row?.is_serving) === 1
      },
      5000,
      'serving',
    )
    const row = await db()
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', nodeId)
      .executeTakeFirstOrThrow()
    expect(String(row.agent_version)).toBe('')
    expect(String(row.hardware)).not.toContain('yyyy')
    expect(server.network.registry.get(nodeId)?.helloed).toBe(false)
    // A raw socket sending an oversized model_status changes nothing either.
    const url = new URL(NODE_WS_PATH, server.url)
    url.protocol = 'ws:'
    const raw = new WebSocket(url, {
      headers: { authorization: nodeAuthorizationHeader(nodeId, credential) },
    })
    await new Promise((r) => raw.once('open', r))
    raw.send(
      JSON.stringify({
        type: 'model_status',
        node_model_id: nm.id,
        is_downloaded: true,
        download_progress: 100,
        is_serving: true,
        tokens_per_second: 1,
        error_message: 'e'.repeat(10_000),
      }),
    )
    await new Promise((r) => setTimeout(r, 300))
    const after = await db()
      .selectFrom('node_models')
      .select('error_message')
      .where('id', '=', nm.id)
      .executeTakeFirstOrThrow()
    expect(String(after.error_message)).toBe('')
    raw.terminate()
    node.kill()
  })
})
