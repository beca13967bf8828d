/**
 * Spot checks of real answers with real llama.cpp (docs/verification.md, "Spot checks of real
 * answers"): canaries are greedy, so a node that answers temperature-0 requests honestly and the
 * others dishonestly passes every canary. Here every user's answer is spot-checked (rates set to
 * 1) by a reference node scoring it with the request's own sampling. An honest node sampling at
 * 0.7 to 1.0 is never failed; a node that is honest at temperature 0 but answers sampled requests
 * from llama-2-tiny-random or with made-up text passes its canary and is then failed by a spot
 * check: reputation down, back on probation, its held earnings back to the users who paid, the
 * ledger audit passing. A spot check never holds up or changes the user's answer or its charge.
 * With SPOT_CHECKS_OFF=1 the rates are 0 and the dishonest nodes' tests fail (they are never
 * caught): each test here can fail.
 */
import { join } from 'node:path'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { LlamaAgents } from './support/llama-agents.ts'
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { createLlamaEngine, type InferenceEngine, type LoadedModel } from '@meshwork/node'
import { modelMirror as mirror } from '@meshwork/test-kit'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { balanceOf, expectAuditPasses, txsOf } from './support/ledger.ts'
import { postJson, waitUntil } from './support/network.ts'
import { disguisedModelEngine } from './support/dishonest-engines.ts'
import { twoFacedEngine, type Cheat } from './support/two-faced-engines.ts'
import { listNodes, setTrusted } from '../src/cli/node-trust.ts'
import { requireCollection } from '../src/core/collections/registry.ts'
import { server as superuser } from '../src/core/records/caller.ts'
import type { AnsweredRequest, SpotCheckOutcome } from '../src/core/verification/spot-checks.ts'
import { madeUpStories } from '../../../bench/verification/made-up-stories.ts'

const rate = process.env.SPOT_CHECKS_OFF ? 0 : 1

describe.each(dialects)('[%s] spot checks of real answers with llama.cpp', (dialect) => {
  let server: TestServer
  let stories: string
  let tokenize: (text: string) => number[]
  let detokenize: (ids: number[]) => string
  const agents = new LlamaAgents(
    () => server,
    () => stories,
  )
  /** The reference's scoring waits for this (test (c) holds it back). */
  let gate: Promise<void> = Promise.resolve()
  const outcomes: Array<{ answered: AnsweredRequest; outcome: SpotCheckOutcome }> = []

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      { modelMirror: mirror },
      {
        network: {
          canaries: { tickMs: 0 },
          spotChecks: { probationRate: rate, verifiedRate: rate, minGapMs: 0 },
          scheduler: { stallMs: 5000, offerTimeoutMs: 5000 },
        },
      },
    )
    server.network.spotChecks.onChecked = (answered, outcome) =>
      outcomes.push({ answered, outcome })
    stories = await modelId(server)
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
    tokenize = (text) => vocab.tokenize(text)
    detokenize = (ids) => vocab.detokenize(ids as unknown as Parameters<typeof vocab.detokenize>[0])
    // The reference: the operator's node, scoring with 2 threads, trusted, taking no user jobs.
    const operator = await signUp(server, 'operator')
    const reference = createLlamaEngine({ gpu: false, threads: 2 })
    const gated: InferenceEngine = {
      ...reference,
      async load(ref, signal): Promise<LoadedModel> {
        const model = await reference.load(ref, signal)
        return {
          ...model,
          score: async (request, s) => {
            await gate
            return model.score!(request, s)
          },
        }
      },
    }
    const referenceId = (await agents.start(operator, { threads: 2, engine: gated })).nodeId
    await operator.collection('nodes').update(referenceId, { is_active: false })
    await setTrusted(server.core.database.db, referenceId, true)
  }, 120_000)
  afterAll(async () => {
    await agents.stop()
    await server?.stop()
  })

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  const node = (id: string) =>
    server.core.database.db
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  /** Takes a node out of user traffic once its test is over, passed or not. */
  const retire = async (nodeId: string) => {
    await server.core.records.update(superuser, requireCollection('nodes'), nodeId, {
      is_active: false,
    })
  }
  const checksOf = (nodeId: string) =>
    server.core.database.db
      .selectFrom('_spot_checks')
      .selectAll()
      .where('node', '=', nodeId)
      .orderBy('created')
      .execute()

  /** A user's chat at `temperature`, answered by `nodeId` (the only active node serving). */
  async function paidChat(nodeId: string, temperature: number, user?: PocketBase) {
    user ??= await signUp(server, 'payer')
    const conversation = await user
      .collection('conversations')
      .create({ title: 'New Chat', user: uid(user) })
    const sent = await postJson(
      server,
      '/api/chat/send',
      {
        conversation_id: conversation.id,
        model_id: stories,
        prompt: 'Tell me a story about a cat.',
        temperature,
      },
      user.authStore.token,
    )
    expect(sent.status).toBe(200)
    const done = await waitUntil(
      async () => {
        const r = await user.collection('requests').getOne(sent.body.request_id as string)
        return (r.status === 'completed' || r.status === 'failed') && r
      },
      120_000,
      'the paid answer',
    )
    expect(done).toMatchObject({ status: 'completed', node: nodeId, temperature })
    return { user, cost: Number(done.cost), requestId: String(done.id), response: done.response }
  }

  it('(a) an honest node answering chats at temperature 0.7 to 1.0 is spot-checked and never failed', async () => {
    const owner = await signUp(server, 'honest')
    const { nodeId } = await agents.start(owner)
    onTestFinished(() => retire(nodeId))
    const before = Number((await node(nodeId)).reputation_score)
    const payers: PocketBase[] = []
    for (const t of [0.7, 0.8, 0.9, 1.0, 0.7, 1.0]) {
      payers.push((await paidChat(nodeId, t)).user)
      // One check of a node at a time: the next answer waits for this one's to be checked.
      await server.network.spotChecks.settled()
    }
    const checks = await checksOf(nodeId)
    expect(checks).toHaveLength(6)
    expect(checks.every((c) => c.status === 'passed')).toBe(true)
    for (const c of checks) expect(Math.abs(Number(c.z))).toBeLessThan(4)
    const after = await node(nodeId)
    expect(after.verification).toBe('probation')
    expect(Number(after.reputation_score)).toBeGreaterThanOrEqual(before)
    // Its earnings stay held (spot checks do not verify a node) and nothing was reversed.
    for (const user of payers) {
      const refunds = (await txsOf(server, uid(user))).filter(
        (t) => t.type === 'credit_inference_reversal',
      )
      expect(refunds).toHaveLength(0)
    }
    expect(Number((await balanceOf(server, uid(owner))).pending_earnings)).toBeGreaterThan(0)
    await expectAuditPasses(server)
  }, 240_000)

  /** Passes a canary (greedy), then is failed by a spot check of a sampled answer. */
  async function expectCaughtBySpotCheck(cheat: Cheat) {
    const owner = await signUp(server, 'two-faced')
    const { nodeId } = await agents.start(owner, { engine: twoFacedEngine(cheat) })
    onTestFinished(() => retire(nodeId))
    expect(await server.network.canaries.run(nodeId, stories)).toMatchObject({ status: 'passed' })
    // A greedy user's answer is spot-checked like a canary, and passes too.
    const greedy = await paidChat(nodeId, 0)
    await server.network.spotChecks.settled()
    expect((await checksOf(nodeId)).map((c) => c.status)).toEqual(['passed'])
    const before = Number((await node(nodeId)).reputation_score)
    // Sampled answers until one's spot check fails the node (short made-up stories need a few:
    // the test waits for 200 tokens).
    const payers = [greedy]
    for (let i = 0; i < 5; i++) {
      payers.push(await paidChat(nodeId, 0.8))
      await server.network.spotChecks.settled()
      if ((await checksOf(nodeId)).some((c) => c.status === 'failed')) break
    }
    const checks = await checksOf(nodeId)
    expect(checks.map((c) => c.status)).toEqual([...payers.slice(1).map(() => 'passed'), 'failed'])
    expect(checks.at(-1)!.detail).toMatch(/standard deviations below/)
    // The operator's `npm run admin -- nodes` shows them.
    const listed = (await listNodes(server.core.database.db)).find((n) => n.id === nodeId)
    expect(listed).toMatchObject({ failed: 0 })
    expect([Number(listed!.spot_failed), Number(listed!.spot_checks)]).toEqual([1, checks.length])
    const after = await node(nodeId)
    expect(after.verification).toBe('probation')
    expect(Number(after.reputation_score)).toBeLessThanOrEqual(before - 2)
    expect(Number(after.pending_earnings)).toBe(0)
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      total_earned: 0,
      pending_earnings: 0,
    })
    for (const p of payers) {
      expect(await balanceOf(server, uid(p.user))).toMatchObject({
        balance: 1000,
        held: 0,
        total_spent: 0,
      })
      const refunds = (await txsOf(server, uid(p.user))).filter(
        (t) => t.type === 'credit_inference_reversal',
      )
      expect(refunds).toMatchObject([{ amount: p.cost, request: p.requestId }])
    }
    await expectAuditPasses(server)
  }

  it('(b) a node honest at temperature 0 that samples from llama-2-tiny-random is failed by a spot check', async () => {
    const wrongPath = join(mirror, 'llama-2-tiny-random.gguf')
    const wrong = disguisedModelEngine(wrongPath, { tokenize, detokenize })
    let model: LoadedModel | null = null
    await expectCaughtBySpotCheck(async (request, onText) => {
      model ??= await wrong.load({ id: 'w', name: 'stories260K', path: wrongPath })
      return model.generate(request, { onText })
    })
  }, 240_000)

  it('(b) a node honest at temperature 0 that answers sampled requests with made-up text is failed', async () => {
    let story = 0
    await expectCaughtBySpotCheck(async (_request, onText) => {
      const text = madeUpStories[story++ % madeUpStories.length]
      const ids = tokenize(text)
      onText(text, ids)
      return { tokensInput: 0, tokensOutput: ids.length, stopReason: 'stop' }
    })
  }, 240_000)

  it("(c) a spot check never holds up or changes the user's answer or its charge", async () => {
    const owner = await signUp(server, 'patient')
    const { nodeId } = await agents.start(owner)
    onTestFinished(() => retire(nodeId))
    let release!: () => void
    gate = new Promise((r) => (release = r))
    try {
      const checked = outcomes.length
      const paid = await paidChat(nodeId, 0.9)
      // Answered, stored and charged while its spot check waits on the reference.
      expect(paid.cost).toBeGreaterThan(0)
      expect(outcomes.length).toBe(checked)
      expect(await checksOf(nodeId)).toHaveLength(0)
      const balance = await balanceOf(server, uid(paid.user))
      expect(balance).toMatchObject({ balance: 1000 - paid.cost, held: 0 })
      const txs = await txsOf(server, uid(paid.user))
      release()
      await server.network.spotChecks.settled()
      expect(outcomes.at(-1)).toMatchObject({
        answered: { requestId: paid.requestId },
        outcome: { status: 'passed' },
      })
      // The same answer, charge and ledger afterwards.
      const after = await paid.user.collection('requests').getOne(paid.requestId)
      expect(after).toMatchObject({ response: paid.response, cost: paid.cost })
      expect(await balanceOf(server, uid(paid.user))).toEqual(balance)
      expect(await txsOf(server, uid(paid.user))).toEqual(txs)
    } finally {
      release()
      gate = Promise.resolve()
    }
    await expectAuditPasses(server)
  }, 240_000)
})
