/**
 * One write path (issue 11, point 3): every write of the chat flow is a unit of work
 * (core/records/unit-of-work.ts) that publishes the records it changed once it committed, one
 * event per record with its committed state, in the order it first touched them. A subscriber
 * watching its requests, conversations, balance and ledger rows over a raw SSE stream sees exactly
 * these events, in order, for a send -> accept -> chunks -> done -> settlement, and for a cancel;
 * a unit of work that rolls back publishes nothing. Each sequence ends with a marker write (the
 * conversation renamed through the records API), so an extra event anywhere before it would show.
 * SQLite and PostgreSQL (with Redis carrying the events).
 */
import type { JobOfferFrame } from '@meshwork/protocol'
import type PocketBase from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { holdCredits } from '../src/core/ledger/reservation.ts'
import { withUnitOfWork } from '../src/core/records/unit-of-work.ts'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { hostileNode, type HostileNode } from './support/hostile-node.ts'
import { postJson, sendChat, waitUntil } from './support/network.ts'
import { openStream, postSubscriptions, type RawStream } from './support/sse.ts'

const TOPICS = ['requests/*', 'conversations/*', 'user_balances/*', 'user_credit_txs/*']

/** An event as one line: what the subscriber's screen would change. */
function describeEvent(e: RawStream['events'][number]): string {
  const { action, record: r } = e.data as { action: string; record: Record<string, unknown> }
  const units = (credits: unknown) => Math.round(Number(credits) * 1000)
  switch (e.event) {
    case 'requests/*':
      return `requests ${action} ${String(r.status)}${r.is_partial ? ' partial' : ''} "${String(r.response)}"`
    case 'conversations/*':
      return `conversations ${action} "${String(r.title)}" messages=${Number(r.message_count)}`
    case 'user_balances/*':
      return `user_balances ${action} balance=${units(r.balance)} held=${units(r.held) > 0 ? 'some' : 0}`
    case 'user_credit_txs/*':
      return `user_credit_txs ${action} ${String(r.type)} ${units(r.amount)}`
    default:
      return `${e.event} ${action}`
  }
}

describe.each(dialects)('[%s] one write path: the events of the chat flow', (dialect) => {
  let server: TestServer
  let stories: string
  let node: HostileNode
  const jobs: JobOfferFrame[] = []
  beforeAll(async () => {
    // Only the test's frames end a job: no stall or deadline may.
    server = await startTestServer(dialect, {}, { network: { scheduler: { stallMs: 120_000 } } })
    stories = await modelId(server)
    node = (await hostileNode(server, stories)).node
    // The test speaks each of the node's frames itself.
    node.behaviour = async (job) => {
      jobs.push(job)
    }
  })
  afterAll(() => server.stop())

  /** A signed-in user whose stream watches its own records from here on. */
  async function watcher() {
    const pb = await signUp(server, 'watcher')
    const stream = await openStream(server.url)
    const subscribed = await postSubscriptions(
      server.url,
      stream.clientId,
      TOPICS,
      pb.authStore.token,
    )
    expect(subscribed.status).toBe(204)
    return { pb, stream, seen: () => stream.events.map(describeEvent) }
  }

  /** Waits for `n` events in all, then answers them described. */
  const eventsUpTo = async (stream: RawStream, n: number) =>
    (await stream.waitFor(n)).map(describeEvent)

  const send = (pb: PocketBase, conversation: string, prompt: string) =>
    sendChat(server, pb, { conversation, model: stories, prompt })

  const nextJob = (count: number) => waitUntil(() => jobs[count], 10_000, 'a job offer')

  it('send, accept, chunks, done and settlement: each write its records, once, in order', async () => {
    const { pb, stream, seen } = await watcher()
    const user = pb.authStore.record!.id
    try {
      // Through the records API: one create, with what its hook wrote in the same unit.
      const conversation = (await pb.collection('conversations').create({ user })).id
      expect(await eventsUpTo(stream, 1)).toEqual(['conversations create "New Chat" messages=0'])
      expect((stream.events[0].data.record as Record<string, unknown>).last_message_at).not.toBe('')

      const jobCount = jobs.length
      const prompt = 'Tell me a story about a dragon'
      const id = await send(pb, conversation, prompt)
      // The hold, the conversation moved to the top and titled, the request: one unit of work.
      expect(await eventsUpTo(stream, 4)).toEqual([
        'conversations create "New Chat" messages=0',
        'user_balances update balance=1000000 held=some',
        `conversations update "${prompt}" messages=0`,
        'requests create pending ""',
      ])

      const job = await nextJob(jobCount)
      node.accept(job)
      expect((await eventsUpTo(stream, 5)).slice(4)).toEqual([
        'requests update processing partial ""',
      ])
      node.chunk(job, 'Once upon')
      expect((await eventsUpTo(stream, 6)).slice(5)).toEqual([
        'requests update processing partial "Once upon"',
      ])
      node.chunk(job, ' a time')
      expect((await eventsUpTo(stream, 7)).slice(6)).toEqual([
        'requests update processing partial "Once upon a time"',
      ])
      node.done(job, 4)
      // The whole answer at once, then the settlement's unit of work.
      await eventsUpTo(stream, 12)
      const done = await pb.collection('requests').getOne(id)
      expect(done.status).toBe('completed')
      const cost = Math.round(Number(done.cost) * 1000)
      expect(cost).toBeGreaterThan(0)

      await pb.collection('conversations').update(conversation, { title: 'marker' })
      await eventsUpTo(stream, 13)
      expect(seen().slice(7)).toEqual([
        'requests update processing partial "Once upon a time"',
        'requests update completed "Once upon a time"',
        // Hold released and the debit: one event with the committed balance.
        `user_balances update balance=${1000000 - cost} held=0`,
        `user_credit_txs create debit_inference_request ${cost}`,
        `conversations update "${prompt}" messages=1`,
        'conversations update "marker" messages=1',
      ])
    } finally {
      await stream.close()
    }
  })

  it('cancel: the request ends with its text, paid as produced, in one unit of work', async () => {
    const { pb, stream, seen } = await watcher()
    const user = pb.authStore.record!.id
    try {
      const conversation = (await pb.collection('conversations').create({ user })).id
      const jobCount = jobs.length
      const id = await send(pb, conversation, 'Tell me a story')
      const job = await nextJob(jobCount)
      node.accept(job)
      await eventsUpTo(stream, 5)
      node.chunk(job, 'Once upon a time there was')
      await eventsUpTo(stream, 6)
      const stopped = await postJson(
        server,
        '/api/requests/cancel',
        { request_id: id },
        pb.authStore.token,
      )
      expect(stopped.body).toMatchObject({ status: 'cancelled' })
      const cost = Math.round(Number(stopped.body.cost) * 1000)
      expect(cost).toBeGreaterThan(0)
      expect(node.cancelled(job)).toBe(true)

      await pb.collection('conversations').update(conversation, { title: 'marker' })
      await eventsUpTo(stream, 11)
      expect(seen()).toEqual([
        'conversations create "New Chat" messages=0',
        'user_balances update balance=1000000 held=some',
        'conversations update "Tell me a story" messages=0',
        'requests create pending ""',
        'requests update processing partial ""',
        'requests update processing partial "Once upon a time there was"',
        'requests update cancelled "Once upon a time there was"',
        `user_balances update balance=${1000000 - cost} held=0`,
        `user_credit_txs create debit_inference_request ${cost}`,
        'conversations update "Tell me a story" messages=1',
        'conversations update "marker" messages=1',
      ])
    } finally {
      await stream.close()
    }
  })

  it('a unit of work that rolls back publishes nothing', async () => {
    const { pb, stream, seen } = await watcher()
    const user = pb.authStore.record!.id
    try {
      const conversation = (await pb.collection('conversations').create({ user })).id
      await eventsUpTo(stream, 1)
      const failed = withUnitOfWork(server.core, async (uow) => {
        await holdCredits(uow, {
          user,
          estimatedInput: 10,
          maxOutput: 10,
          minOutput: 1,
          multiplierUnits: 1000,
        })
        await uow.update('conversations', (q) =>
          q.set({ title: 'never seen' }).where('id', '=', conversation),
        )
        throw new Error('rolled back')
      })
      await expect(failed).rejects.toThrow('rolled back')

      await pb.collection('conversations').update(conversation, { title: 'marker' })
      await eventsUpTo(stream, 2)
      expect(seen()).toEqual([
        'conversations create "New Chat" messages=0',
        'conversations update "marker" messages=0',
      ])
      // And nothing of it was stored.
      const balance = await pb.collection('user_balances').getFirstListItem(`user = "${user}"`)
      expect(balance.held).toBe(0)
    } finally {
      await stream.close()
    }
  })
})
