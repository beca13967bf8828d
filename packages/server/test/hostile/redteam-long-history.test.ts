/**
 * A conversation grown without bound, then read whole by every message: a send, a quote, a
 * regenerate or a retry built its prompt from every earlier answer of the conversation, all of
 * them read from the database (prompt and response) before the newest that fit the context were
 * kept. A node owner chatting with its own node pays nothing (self-dealing is free), so it can
 * store 20 messages a minute of 32,000 characters each in one conversation: about 0.9 GB a day,
 * all of which one quote (200 a minute allowed) then read into the coordinator's memory. Now only
 * the newest turns that can fit the context are read: their lengths first, then their text. SQLite
 * and PostgreSQL.
 */
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildPrompt, type Turn } from '../../src/core/chat/build-prompt.ts'
import { CONTEXT_LENGTH, MAX_OUTPUT_TOKENS } from '../../src/core/chat/chat-service.ts'
import { newRecordId } from '../../src/tools/ids.ts'
import { modelId } from '../fixtures.ts'
import { dialects, startTestServer, type TestServer } from '../harness.ts'
import { adjustBalance, expectAuditPasses } from '../support/ledger.ts'
import { linkedNode, FakeNode, postJson, requestEnded, sendChat } from '../support/network.ts'
import { signUp } from '../harness.ts'

/** Counts the characters of text the database hands back, per statement kind. */
class TextRead implements KyselyPlugin {
  chars = 0
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    for (const row of args.result.rows)
      for (const value of Object.values(row))
        if (typeof value === 'string') this.chars += value.length
    return args.result
  }
}

/** A message its sender's 1,000 credits can hold for (about 4 characters a token). */
const PROMPT = 3_500

describe.each(dialects)('[%s] a conversation of thousands of long messages', (dialect) => {
  let server: TestServer
  let stories: string
  beforeAll(async () => {
    server = await startTestServer(dialect, { chatRateLimit: 0 })
    stories = await modelId(server)
  })
  afterAll(() => server.stop())

  it('costs a message only what can fit its context', async () => {
    const owner = await signUp(server, 'grower')
    const { node } = await linkedNode(
      server,
      stories,
      owner,
      (id, credential) => new FakeNode(server, id, credential),
    )
    node.chunks = ['y'.repeat(8_000)] // the longest answer the budget lets it store
    const conversation = (await owner.collection('conversations').create({ title: 'New Chat' })).id
    // Through the real flow: a long message answered by the owner's own node is free.
    const first = await sendChat(server, owner, {
      conversation,
      model: stories,
      prompt: 'x'.repeat(PROMPT),
    })
    const stored = await requestEnded(server, first)
    expect(stored.status).toBe('completed')
    expect(Number(stored.cost)).toBe(0)
    // Many more like it: what 20 sends a minute store in under two hours.
    const db = server.core.database.db
    const rows = Array.from({ length: 2_000 }, (_, i) => ({
      ...stored,
      id: newRecordId(),
      created: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString().replace('T', ' '),
      idempotency_key: '',
    }))
    for (let i = 0; i < rows.length; i += 50)
      await db
        .insertInto('requests')
        .values(rows.slice(i, i + 50))
        .execute()

    const read = new TextRead()
    server.core.database.db = db.withPlugin(read)
    try {
      const quote = await postJson(
        server,
        '/api/chat/quote',
        { conversation_id: conversation, model_id: stories, prompt: 'and then?' },
        owner.authStore.token,
      )
      expect(quote.status).toBe(200)
      // The context holds 8,000 tokens (about 32,000 characters): before, every message was read.
      expect(read.chars).toBeLessThan(100_000)
      read.chars = 0
      // A full context is held for (and released: the owner's own node answers for free).
      await adjustBalance(server, owner.authStore.record!.id, 10_000)
      const sent = await sendChat(server, owner, { conversation, model: stories, prompt: 'and?' })
      expect(read.chars).toBeLessThan(100_000)
      await requestEnded(server, sent)
      // The prompt is what the whole history gives: the newest turns that fit, oldest first.
      const all = (await db
        .selectFrom('requests')
        .select(['prompt', 'response'])
        .where('conversation', '=', conversation)
        .where('status', '=', 'completed')
        .where('id', '!=', sent)
        .orderBy('created')
        .orderBy('id')
        .execute()) as Turn[]
      const expected = await buildPrompt(all, 'and?', CONTEXT_LENGTH, MAX_OUTPUT_TOKENS)
      const offered = node.jobs.find((j) => j.request_id === sent)!
      expect(offered.prompt.messages).toEqual(expected.messages)
      expect(offered.prompt.messages.length).toBeGreaterThan(2)
    } finally {
      server.core.database.db = db
      node.kill()
    }
    await expectAuditPasses(server)
  })
})
