/**
 * Canary verification with real llama.cpp (issue 13, point 4): a reference node (trusted by the
 * operator's command line) scores other nodes' canary answers by teacher forcing. An honest node
 * on stories260K passes (with a different thread count and batch size than the reference); a node
 * serving llama-2-tiny-random while claiming stories260K, a node returning made-up text, and a
 * node generating with one model while reporting another's token ids all fail and lose reputation.
 * Each node first answers a paying user's chat while on probation: the honest node's owner is paid
 * that earning when it is verified; each dishonest node's owner loses it, and the user who paid
 * gets every credit back (a reversal row on the request). The ledger audit passes after each.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LlamaAgents } from './support/llama-agents.ts'
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { balanceOf, expectAuditPasses, txsOf } from './support/ledger.ts'
import { FakeNode, linkNode, postJson, waitUntil } from './support/network.ts'
import {
  disguisedModelEngine,
  swappedModelEngine,
  type Vocabulary,
} from './support/dishonest-engines.ts'
import { setTrusted } from '../src/cli/node-trust.ts'
import { requireCollection } from '../src/core/collections/registry.ts'
import { server as superuser } from '../src/core/records/caller.ts'
import type { CanaryOutcome } from '../src/core/verification/canaries.ts'
import { madeUpStories } from '../../../bench/verification/made-up-stories.ts'
import { modelMirror as mirror } from '@meshwork/test-kit'

const serverRoot = fileURLToPath(new URL('..', import.meta.url))

describe.each(dialects)('[%s] canary verification with llama.cpp', (dialect) => {
  let server: TestServer
  let stories: string
  let operator: PocketBase
  let referenceId: string
  const agents = new LlamaAgents(
    () => server,
    () => stories,
  )
  let tokenize: (text: string) => number[]
  let vocabulary: Vocabulary

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      { modelMirror: mirror },
      {
        network: {
          canaries: { tickMs: 0 },
          // Canaries alone here (spot checks: spot-checks.test.ts).
          spotChecks: { probationRate: 0, verifiedRate: 0 },
          scheduler: { stallMs: 5000, offerTimeoutMs: 5000 },
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
    const vocab = await llama.loadModel({
      modelPath: join(mirror, 'stories260K.gguf'),
      vocabOnly: true,
    })
    tokenize = (text) => vocab.tokenize(text)
    vocabulary = {
      tokenize,
      detokenize: (ids) =>
        vocab.detokenize(ids as unknown as Parameters<typeof vocab.detokenize>[0]),
    }

    // The reference: the operator's own node, scoring with 2 threads, trusted on the command line.
    operator = await signUp(server, 'operator')
    referenceId = (await agents.start(operator, { threads: 2 })).nodeId
    // It scores but takes no user jobs.
    await operator.collection('nodes').update(referenceId, { is_active: false })
    if (dialect === 'sqlite') {
      const out = await promisify(execFile)(
        'npx',
        ['tsx', 'src/cli/admin.ts', 'trust', referenceId],
        {
          cwd: serverRoot,
          env: { ...process.env, MESHWORK_DATA_DIR: server.core.config.dataDir },
        },
      )
      expect(out.stdout).toMatch(/is trusted/)
    } else {
      await setTrusted(server.core.database.db, referenceId, true)
    }
  }, 120_000)
  afterAll(async () => {
    await agents.stop()
    await server?.stop()
  })

  const uid = (pb: PocketBase) => pb.authStore.record!.id

  /**
   * A user's chat answered by `nodeId` (on probation, it is the only active node serving the
   * model: the others were made inactive after their tests); the user and the cost in credits.
   */
  async function paidChat(nodeId: string) {
    const user = await signUp(server, 'payer')
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
    expect(done).toMatchObject({ status: 'completed', node: nodeId })
    const cost = Number(done.cost)
    expect(cost).toBeGreaterThan(0)
    return { user, cost, requestId: String(done.id) }
  }

  /** Takes the node out of user traffic once its test is over (it stays connected): a write
   * with its record event, as its owner's would be, so the scheduler sees it at once. */
  const retire = (nodeId: string) =>
    server.core.records.update(superuser, requireCollection('nodes'), nodeId, { is_active: false })

  const node = (id: string) =>
    server.core.database.db
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()

  /** Canaries until the node is judged one way or the other (at most `max`). */
  async function canariesUntil(nodeId: string, want: 'graduated' | 'failed', max = 6) {
    const outcomes: CanaryOutcome[] = []
    for (let i = 0; i < max; i++) {
      const outcome = await server.network.canaries.run(nodeId, stories)
      outcomes.push(outcome)
      if (outcome.status === 'failed' || (outcome.status === 'passed' && outcome.graduated)) break
    }
    const last = outcomes.at(-1)!
    if (want === 'failed') expect(last.status).toBe('failed')
    else expect(last).toMatchObject({ status: 'passed', graduated: true })
    return outcomes
  }

  it('an honest node on another thread count passes its canaries and is verified', async () => {
    const owner = await signUp(server, 'honest')
    const { nodeId } = await agents.start(owner, { threads: 1 })
    expect((await node(nodeId)).verification).toBe('probation')
    // On probation its owner's earning from a paying user is held.
    const paid = await paidChat(nodeId)
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000,
      pending_earnings: paid.cost,
    })
    const before = Number((await node(nodeId)).reputation_score)
    const outcomes = await canariesUntil(nodeId, 'graduated')
    expect(outcomes.every((o) => o.status === 'passed')).toBe(true)
    const tokens = outcomes.reduce((n, o) => n + ('tokens' in o ? o.tokens : 0), 0)
    expect(tokens).toBeGreaterThanOrEqual(300)
    const after = await node(nodeId)
    expect(after).toMatchObject({ verification: 'verified', canaries_failed: 0 })
    expect(Number(after.canaries_passed)).toBe(outcomes.length)
    expect(Number(after.reputation_score)).toBeGreaterThan(before)
    // Canaries look like requests: completed rows with a node job, paid by nobody.
    // Verified: the held earning is paid to the owner.
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000 + paid.cost,
      total_earned: paid.cost,
      pending_earnings: 0,
    })
    const rows = await server.core.database.db
      .selectFrom('requests')
      .selectAll()
      .where('node', '=', nodeId)
      .where('user', '=', '')
      .execute()
    expect(rows).toHaveLength(outcomes.length)
    for (const r of rows) expect(r).toMatchObject({ status: 'completed', temperature: 0, user: '' })
    const txs = await server.core.database.db
      .selectFrom('user_credit_txs')
      .selectAll()
      .where(
        'request',
        'in',
        rows.map((r) => String(r.id)),
      )
      .execute()
    expect(txs).toHaveLength(0)
    await expectAuditPasses(server)
    await retire(nodeId)
  }, 240_000)

  /**
   * A paying user's chat, then canaries until one fails: reputation falls sharply, the owner
   * loses the pending earning and the user gets every credit back.
   */
  async function expectFailedAndPunished(owner: PocketBase, nodeId: string) {
    const paid = await paidChat(nodeId)
    expect(await balanceOf(server, uid(owner))).toMatchObject({ pending_earnings: paid.cost })
    expect(await balanceOf(server, uid(paid.user))).toMatchObject({ balance: 1000 - paid.cost })
    const before = Number((await node(nodeId)).reputation_score)
    await canariesUntil(nodeId, 'failed')
    const after = await node(nodeId)
    expect(after.verification).toBe('probation')
    expect(Number(after.canaries_failed)).toBe(1)
    expect(Number(after.reputation_score)).toBeLessThanOrEqual(before - 2)
    expect(Number(after.pending_earnings)).toBe(0)
    expect(await balanceOf(server, uid(owner))).toMatchObject({
      balance: 1000,
      total_earned: 0,
      pending_earnings: 0,
    })
    expect(await balanceOf(server, uid(paid.user))).toMatchObject({
      balance: 1000,
      held: 0,
      total_spent: 0,
    })
    const refunds = (await txsOf(server, uid(paid.user))).filter(
      (t) => t.type === 'credit_inference_reversal',
    )
    expect(refunds).toMatchObject([{ amount: paid.cost, request: paid.requestId }])
    await expectAuditPasses(server)
    await retire(nodeId)
  }

  it('a node serving llama-2-tiny-random while claiming stories260K fails', async () => {
    const owner = await signUp(server, 'swapper')
    const { nodeId } = await agents.start(owner, {
      engine: swappedModelEngine(join(mirror, 'llama-2-tiny-random.gguf')),
    })
    await expectFailedAndPunished(owner, nodeId)
  }, 240_000)

  it("a node generating with one model and reporting the other's token ids fails", async () => {
    const owner = await signUp(server, 'disguiser')
    const { nodeId } = await agents.start(owner, {
      engine: disguisedModelEngine(join(mirror, 'llama-2-tiny-random.gguf'), vocabulary),
    })
    await expectFailedAndPunished(owner, nodeId)
  }, 240_000)

  it('a node returning made-up text (with ids that spell it) fails', async () => {
    const owner = await signUp(server, 'inventor')
    const { nodeId, credential } = await linkNode(server, owner)
    const fake = new FakeNode(server, nodeId, credential)
    let story = 0
    const nextStory = () => {
      const text = madeUpStories[story++ % madeUpStories.length]
      fake.chunks = [text]
      fake.chunkTokens = [tokenize(text)]
    }
    nextStory()
    fake.tokensOutputReported = 100
    await fake.connect()
    await agents.serve(owner, nodeId)
    const run = server.network.canaries.run.bind(server.network.canaries)
    server.network.canaries.run = async (...args) => {
      const outcome = await run(...args)
      nextStory()
      return outcome
    }
    try {
      await expectFailedAndPunished(owner, nodeId)
    } finally {
      server.network.canaries.run = run
      fake.kill()
    }
  }, 240_000)

  it('without a reference for the model no canary is sent', async () => {
    const tiny = await modelId(server, 'llama-2-tiny-random')
    expect(await server.network.canaries.run('nonexistent', tiny)).toEqual({
      status: 'no_reference',
    })
  })
})
