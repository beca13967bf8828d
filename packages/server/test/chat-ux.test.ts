/**
 * Chat as people know it (issue 9 item 4), from the outside: conversation order and titles,
 * a temperature per conversation, regenerate, the pre-send quote, and one conversation's
 * requests followed live from another client (another tab).
 */
import { Kysely, Migrator, SqliteDialect } from 'kysely'
import SqliteDatabase from 'better-sqlite3'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { autoTitle } from '../src/core/chat/conversation-activity.ts'
import { toUnits } from '../src/core/ledger/credits.ts'
import { migrateToLatest } from '../src/db/migrate.ts'
import { init } from '../src/db/migrations/0001-init.ts'
import { seed } from '../src/db/migrations/0002-seed.ts'
import { apiKeys } from '../src/db/migrations/0060-api-keys.ts'
import { dialects, expectApiError, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { postJson, servingNode, waitUntil, type FakeNode } from './support/network.ts'

describe('autoTitle', () => {
  it('takes the first line, without markdown markers, cut at a word boundary', () => {
    expect(autoTitle('  How do I   bake bread?\nI have flour.')).toBe('How do I bake bread?')
    expect(autoTitle('\n\n# **Plan** for `today`\n- eggs')).toBe('Plan for today')
    expect(autoTitle('   \n  ')).toBe('New Chat')
    const long =
      'Explain the difference between a process and a thread in an operating system kernel'
    const title = autoTitle(long)
    expect(title.endsWith('…')).toBe(true)
    expect(Array.from(title).length).toBeLessThanOrEqual(60)
    expect(long.startsWith(title.slice(0, -1))).toBe(true)
    expect(autoTitle('x'.repeat(100))).toBe(`${'x'.repeat(59)}…`)
  })
})

describe('migration 0050 on a database made before it', () => {
  it('dates undated conversations by their creation and gives each a temperature, after a later-numbered migration ran', async () => {
    const db = new Kysely<any>({
      dialect: new SqliteDialect({ database: new SqliteDatabase(':memory:') }),
    })
    try {
      const before = new Migrator({
        db,
        provider: {
          getMigrations: async () => ({
            '0001-init': init,
            '0002-seed': seed,
            '0060-api-keys': apiKeys,
          }),
        },
      })
      expect((await before.migrateToLatest()).error).toBeUndefined()
      const base = { user: 'u1', model: '', title: 'Old', message_count: 0, updated: '' }
      await db
        .insertInto('conversations')
        .values([
          { ...base, id: 'c1', last_message_at: '', created: '2025-01-01 10:00:00.000Z' },
          {
            ...base,
            id: 'c2',
            last_message_at: '2025-02-01 10:00:00.000Z',
            created: '2025-01-02 10:00:00.000Z',
          },
        ])
        .execute()
      await db
        .insertInto('requests')
        .values({ id: 'r1', conversation: 'c2', created: '' })
        .execute()
      expect(await migrateToLatest(db)).toContain('0050-chat-ux')
      const rows = await db.selectFrom('conversations').selectAll().orderBy('id').execute()
      expect(rows.map((r) => [r.id, r.last_message_at, r.temperature])).toEqual([
        ['c1', '2025-01-01 10:00:00.000Z', 0.7],
        ['c2', '2025-02-01 10:00:00.000Z', 0.7],
      ])
      expect(await db.selectFrom('requests').select('replaced_by').execute()).toEqual([
        { replaced_by: '' },
      ])
    } finally {
      await db.destroy()
    }
  })
})

describe.each(dialects)('[%s] chat that behaves like the chats people know', (dialect) => {
  let server: TestServer
  let stories: string
  let node: FakeNode

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      {},
      { network: { scheduler: { stallMs: 1000, offerTimeoutMs: 1000 }, maxOutputTokens: 100 } },
    )
    stories = await modelId(server)
    node = (await servingNode(server, stories)).node
  })
  afterAll(async () => {
    await server?.stop()
  })

  const db = () => server.core.database.db
  const userId = (pb: PocketBase) => pb.authStore.record!.id
  const send = (pb: PocketBase, body: Record<string, unknown>) =>
    postJson(server, '/api/chat/send', body, pb.authStore.token)
  const regenerate = (pb: PocketBase, requestId: string) =>
    postJson(server, '/api/chat/regenerate', { request_id: requestId }, pb.authStore.token)
  const request = (id: string) =>
    db().selectFrom('requests').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  const completed = (id: string) =>
    waitUntil(
      async () => (await request(id)).status === 'completed',
      10_000,
      `request ${id} completed`,
    )
  const newConversation = (pb: PocketBase, body: Record<string, unknown> = {}) =>
    pb.collection('conversations').create({ title: 'New Chat', model: stories, ...body })
  const sidebar = (pb: PocketBase) =>
    pb.collection('conversations').getList(1, 50, {
      sort: '-last_message_at,-created',
      filter: pb.filter('user = {:u}', { u: userId(pb) }),
    })

  it('puts a new conversation on top of older ones, even past the first page of 50', async () => {
    const pb = await signUp(server, 'sorter')
    const old = await newConversation(pb)
    const first = await send(pb, {
      conversation_id: old.id,
      model_id: stories,
      prompt: 'An old story',
    })
    await completed(first.body.request_id as string)
    // 60 conversations dated a month ago, as if made before this release.
    const monthAgo = '2020-01-01 00:00:00.000Z'
    for (let i = 0; i < 60; i++) {
      const c = await newConversation(pb, { title: `Old ${i}` })
      await db()
        .updateTable('conversations')
        .set({ last_message_at: monthAgo, created: monthAgo })
        .where('id', '=', c.id)
        .execute()
    }
    const fresh = await newConversation(pb)
    expect(fresh.last_message_at).toBe(fresh.created)
    const page = await sidebar(pb)
    expect(page.items[0].id).toBe(fresh.id)
    expect(page.items[1].id).toBe(old.id)
    // A message moves its conversation to the top at once, before the answer is done.
    node.chunkDelayMs = 200
    const sent = await send(pb, { conversation_id: old.id, model_id: stories, prompt: 'Again' })
    expect((await request(sent.body.request_id as string)).status).not.toBe('completed')
    expect((await sidebar(pb)).items[0].id).toBe(old.id)
    node.chunkDelayMs = 20
    await completed(sent.body.request_id as string)
  })

  it('titles a conversation from its first message, and only a default-titled one', async () => {
    const pb = await signUp(server, 'titler')
    const conv = await newConversation(pb)
    const events: string[] = []
    await pb
      .collection('conversations')
      .subscribe(conv.id, (e) => events.push(e.record.title as string))
    const first = await send(pb, {
      conversation_id: conv.id,
      model_id: stories,
      prompt: 'Tell me about **dragons** and their caves\nPlease be brief.',
    })
    expect((await pb.collection('conversations').getOne(conv.id)).title).toBe(
      'Tell me about dragons and their caves',
    )
    await waitUntil(
      () => events.includes('Tell me about dragons and their caves'),
      5000,
      'title event',
    )
    await completed(first.body.request_id as string)
    const second = await send(pb, {
      conversation_id: conv.id,
      model_id: stories,
      prompt: 'Something else',
    })
    await completed(second.body.request_id as string)
    expect((await pb.collection('conversations').getOne(conv.id)).title).toBe(
      'Tell me about dragons and their caves',
    )
    const named = await newConversation(pb, { title: 'My Own Name' })
    const third = await send(pb, {
      conversation_id: named.id,
      model_id: stories,
      prompt: 'Hello there',
    })
    await completed(third.body.request_id as string)
    expect((await pb.collection('conversations').getOne(named.id)).title).toBe('My Own Name')
    await pb.collection('conversations').unsubscribe()
  })

  it('keeps a temperature per conversation and answers with it when the send names none', async () => {
    const pb = await signUp(server, 'warm')
    const conv = await newConversation(pb)
    expect(conv.temperature).toBe(0.7)
    const updated = await pb.collection('conversations').update(conv.id, { temperature: 1.3 })
    expect(updated.temperature).toBe(1.3)
    try {
      await pb.collection('conversations').update(conv.id, { temperature: 2.5 })
      expect.unreachable('2.5 is above the range')
    } catch (err) {
      const e = expectApiError(err)
      expect(e.status).toBe(400)
      expect(e.response.data).toMatchObject({
        temperature: { code: 'validation_max_number_constraint' },
      })
    }
    const other = await newConversation(pb, { temperature: 0.2 })
    const jobs = node.jobs.length
    const a = await send(pb, { conversation_id: conv.id, model_id: stories, prompt: 'Warm one' })
    await completed(a.body.request_id as string)
    const b = await send(pb, { conversation_id: other.id, model_id: stories, prompt: 'Cool one' })
    await completed(b.body.request_id as string)
    expect(node.jobs.slice(jobs).map((j) => j.sampling.temperature)).toEqual([1.3, 0.2])
    expect((await request(a.body.request_id as string)).temperature).toBe(1.3)
  })

  it('regenerates the last answer: a new request, the old one replaced and left out of prompts', async () => {
    const pb = await signUp(server, 'regen')
    const stranger = await signUp(server, 'stranger')
    const conv = await newConversation(pb)
    const first = (await send(pb, { conversation_id: conv.id, model_id: stories, prompt: 'One' }))
      .body
    await completed(first.request_id as string)
    const second = (await send(pb, { conversation_id: conv.id, model_id: stories, prompt: 'Two' }))
      .body
    await completed(second.request_id as string)

    expect(await regenerate(pb, first.request_id as string)).toMatchObject({
      status: 400,
      body: { message: 'Only the last answer can be regenerated.' },
    })
    expect((await regenerate(stranger, second.request_id as string)).status).toBe(404)
    expect(
      (await postJson(server, '/api/chat/regenerate', { request_id: second.request_id })).status,
    ).toBe(401)

    await pb.collection('conversations').update(conv.id, { temperature: 1.9 })
    const debitsBefore = await db()
      .selectFrom('user_credit_txs')
      .select('id')
      .where('user', '=', userId(pb))
      .where('type', '=', 'debit_inference_request')
      .execute()
    const jobs = node.jobs.length
    const again = await regenerate(pb, second.request_id as string)
    expect(again.body).toMatchObject({ status: 'queued' })
    const newId = again.body.request_id as string
    expect(newId).not.toBe(second.request_id)
    // While it is being written, it cannot be regenerated again.
    expect((await regenerate(pb, newId)).body.message).toBe('This answer is still being written.')
    await completed(newId)
    const job = node.jobs[jobs]
    expect(job.sampling.temperature).toBe(1.9)
    // The same earlier turn ('One'), the same prompt ('Two'); not the replaced answer.
    expect(job.prompt.messages.map((m) => m.content)).toEqual(['One', 'Once upon a time', 'Two'])
    expect((await request(second.request_id as string)).replaced_by).toBe(newId)
    expect((await regenerate(pb, second.request_id as string)).body.message).toBe(
      'Only the last answer can be regenerated.',
    )
    // Charged like any send.
    await waitUntil(
      async () =>
        (
          await db()
            .selectFrom('user_credit_txs')
            .select('id')
            .where('user', '=', userId(pb))
            .where('type', '=', 'debit_inference_request')
            .execute()
        ).length ===
        debitsBefore.length + 1,
      5000,
      'debit for the regenerated answer',
    )
    // The history the web app reads leaves the replaced answer out; the next prompt too.
    const history = await pb.collection('requests').getFullList({
      sort: 'created',
      filter: pb.filter('conversation = {:c} && replaced_by = ""', { c: conv.id }),
    })
    expect(history.map((r) => r.id)).toEqual([first.request_id, newId])
    const next = await send(pb, { conversation_id: conv.id, model_id: stories, prompt: 'Three' })
    await completed(next.body.request_id as string)
    expect(node.jobs.at(-1)!.prompt.messages.map((m) => m.content)).toEqual([
      'One',
      'Once upon a time',
      'Two',
      'Once upon a time',
      'Three',
    ])
    // Nobody else can see which answer replaced which.
    const seen = await stranger.collection('requests').getList(1, 5, {
      filter: stranger.filter('replaced_by = {:id}', { id: newId }),
    })
    expect(seen.items).toEqual([])
  })

  it('quotes the most a message can cost: exactly the hold a send then takes', async () => {
    const pb = await signUp(server, 'quoter')
    const conv = await newConversation(pb)
    const prompt = 'A question of forty characters, give or take'
    node.chunkDelayMs = 200
    const quote = await postJson(
      server,
      '/api/chat/quote',
      { conversation_id: conv.id, model_id: stories, prompt },
      pb.authStore.token,
    )
    expect(quote.status).toBe(200)
    expect(quote.body).toMatchObject({
      available: 1000,
      estimated_input: Math.floor(prompt.length / 4),
      max_cost: Math.floor(prompt.length / 4) + 100,
      output_cap: 100,
      max_output: 100,
    })
    const sent = await send(pb, { conversation_id: conv.id, model_id: stories, prompt })
    const balance = await db()
      .selectFrom('user_balances')
      .select('held')
      .where('user', '=', userId(pb))
      .executeTakeFirstOrThrow()
    // The ledger holds thousandths of a credit; the API speaks credits.
    expect(Number(balance.held)).toBe(toUnits(quote.body.max_cost as number))
    node.chunkDelayMs = 20
    await completed(sent.body.request_id as string)

    const stranger = await signUp(server, 'peeker')
    const foreign = await postJson(
      server,
      '/api/chat/quote',
      { conversation_id: conv.id, model_id: stories, prompt },
      stranger.authStore.token,
    )
    expect(foreign).toMatchObject({
      status: 403,
      body: { message: 'Conversation does not belong to current user' },
    })
    expect((await postJson(server, '/api/chat/quote', { model_id: stories, prompt })).status).toBe(
      401,
    )
    expect(
      (await postJson(server, '/api/chat/quote', { prompt }, pb.authStore.token)).body.message,
    ).toBe('Model ID is required')
  })

  it('quotes null when the balance cannot pay the smallest answer, with the least it needs', async () => {
    const pb = await signUp(server, 'poor')
    await db()
      .updateTable('user_balances')
      .set({ balance: toUnits(10) })
      .where('user', '=', userId(pb))
      .execute()
    const quote = await postJson(
      server,
      '/api/chat/quote',
      { model_id: stories, prompt: 'x'.repeat(40) },
      pb.authStore.token,
    )
    expect(quote.body).toMatchObject({
      available: 10,
      max_cost: null,
      output_cap: 0,
      min_cost: 10 + 16,
    })
  })

  it("streams one conversation's requests to another client of the same user, and to nobody else", async () => {
    const tabA = await signUp(server, 'tabs')
    const tabB = server.client()
    tabB.authStore.save(tabA.authStore.token, tabA.authStore.record)
    const stranger = await signUp(server, 'snoop')
    const conv = await newConversation(tabA)
    const seenByB: Array<{ action: string; response: string; status: string; prompt: string }> = []
    const seenByStranger: unknown[] = []
    const filter = tabB.filter('conversation = {:c}', { c: conv.id })
    await tabB.collection('requests').subscribe(
      '*',
      (e) =>
        seenByB.push({
          action: e.action,
          response: e.record.response as string,
          status: e.record.status as string,
          prompt: e.record.prompt as string,
        }),
      { filter },
    )
    await stranger.collection('requests').subscribe('*', (e) => seenByStranger.push(e), { filter })
    node.chunkDelayMs = 60
    const sent = await send(tabA, {
      conversation_id: conv.id,
      model_id: stories,
      prompt: 'From tab A',
    })
    await completed(sent.body.request_id as string)
    await waitUntil(
      () => seenByB.some((e) => e.status === 'completed'),
      5000,
      'completed event in tab B',
    )
    node.chunkDelayMs = 20
    expect(seenByB[0]).toMatchObject({ action: 'create', prompt: 'From tab A', status: 'pending' })
    expect(seenByB.some((e) => e.response && e.status !== 'completed')).toBe(true)
    expect(seenByB.at(-1)).toMatchObject({ response: 'Once upon a time', status: 'completed' })
    expect(seenByStranger).toEqual([])
    await tabB.collection('requests').unsubscribe()
    await stranger.collection('requests').unsubscribe()
  })
})
