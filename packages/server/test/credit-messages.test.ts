/**
 * What a user is told about credits, and what a short balance still buys: a refused send states
 * what is available in the chat footer's rounding (446.5 -> 447) and what is needed rounded up,
 * mentions credits held by answers in progress, never contradicts itself; a balance that pays for
 * a shorter answer gets one (the node is asked for fewer tokens); `cost` on the request says what
 * was charged, to its owner only. SQLite and PostgreSQL.
 */
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { editModel } from '../src/cli/admin-commands.ts'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { hostileNode, streamThenWait } from './support/hostile-node.ts'
import { adjustBalance, balanceOf, expectAuditPasses } from './support/ledger.ts'
import { postJson, waitUntil } from './support/network.ts'

describe.each(dialects)('[%s] credit messages and short balances', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect)
    stories = await modelId(server)
  })
  afterAll(() => server.stop())

  const uid = (pb: PocketBase) => pb.authStore.record!.id
  const send = async (pb: PocketBase, prompt: string, model = stories) => {
    const conversation = await pb
      .collection('conversations')
      .create({ title: 'New Chat', user: uid(pb) })
    return postJson(
      server,
      '/api/chat/send',
      { conversation_id: conversation.id, model_id: model, prompt },
      pb.authStore.token,
    )
  }

  it('a refusal reads the footer rounding, mentions holds, and never contradicts itself', async () => {
    const { node } = await hostileNode(server, stories)
    node.behaviour = streamThenWait('Once')
    try {
      const pb = await signUp(server, 'short')
      await adjustBalance(server, uid(pb), -553.5) // 446.5 left: the footer shows 447
      const long = 'x'.repeat(2000) // 500 input tokens: 516 credits at least
      const refused = await send(pb, long)
      expect(refused).toMatchObject({
        status: 400,
        body: { message: 'Insufficient credits: 447 available, at least 516 needed.' },
      })

      // With an answer in progress, the refusal says what it holds.
      expect((await send(pb, 'Tell me a story')).status).toBe(200)
      await node.firstJob()
      const held = (await balanceOf(server, uid(pb))).held as number
      expect(held).toBe(3 + 256)
      const whileHeld = await send(pb, 'y'.repeat(800)) // 200 input tokens: 216 needed, 187.5 free
      expect(whileHeld.body.message).toBe(
        'Insufficient credits: 188 available (259 held for answers in progress), at least 216 needed.',
      )

      // Rounded, 515.51 available and 515.515 needed would both read 516: exact figures instead.
      await editModel(server.core.database.db, 'stories260K', { credit_multiplier: 1.001 })
      const edge = await signUp(server, 'edge')
      await adjustBalance(server, uid(edge), -484.49)
      const tie = await send(edge, 'z'.repeat(1996)) // 499 input tokens: (499 + 16) x 1.001
      expect(tie.body.message).toBe(
        'Insufficient credits: 515.51 available, at least 515.515 needed.',
      )
    } finally {
      await editModel(server.core.database.db, 'stories260K', { credit_multiplier: 1 })
      node.kill()
    }
  })

  it('a balance that pays for a shorter answer gets one, and cost says what was charged', async () => {
    const { node } = await hostileNode(server, stories)
    try {
      const pb = await signUp(server, 'frugal')
      await adjustBalance(server, uid(pb), -949.5) // 50.5 left
      const sent = await send(pb, 'abcdefghijklmnopqrstuvwxyzabcdefghijklmn') // 10 input tokens
      expect(sent.status).toBe(200)
      const job = await node.firstJob()
      expect(job.sampling.max_tokens).toBe(40) // floor(50.5) - 10: what the balance pays for
      const id = sent.body.request_id as string
      const done = await waitUntil(
        async () => {
          const r = await pb.collection('requests').getOne(id)
          return r.status === 'completed' && r
        },
        10_000,
        'the answer',
      )
      expect(done.cost).toBe(10 + 4)
      expect(await balanceOf(server, uid(pb))).toMatchObject({ balance: 50.5 - 14, held: 0 })
      // Another user sees the request (the Network screen needs it) but not what it cost.
      const other = await signUp(server, 'other')
      const seen = await other.collection('requests').getOne(id)
      expect(seen).not.toHaveProperty('cost')
      expect(seen).not.toHaveProperty('reserved')
      await expectAuditPasses(server)
    } finally {
      node.kill()
    }
  })
})
