/**
 * The hold sweeps: whatever a crash or a bug leaves held without an open request is released at
 * start-up (and hourly), loudly, while the holds of requests in progress are kept to the unit; a
 * hold a deletion kept for the charge of its streamed part, when that charge never comes, is
 * released uncharged once older than the bound (two minutes), and kept until then. SQLite and
 * PostgreSQL.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import {
  DELETION_HOLD_BOUND_MS,
  sweepDeletionHolds,
  sweepStrandedHolds,
} from '../src/core/ledger/hold-sweep.ts'
import { formatDate } from '../src/tools/dates.ts'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer } from './harness.ts'
import { hostileNode, streamThenWait } from './support/hostile-node.ts'
import { DbFaults } from './support/db-faults.ts'
import { balanceOf, expectAuditPasses, txsOf } from './support/ledger.ts'
import { postJson, waitUntil } from './support/network.ts'

describe.each(dialects)('[%s] stranded-hold sweep', (dialect) => {
  it('releases holds without an open request at start-up, loudly, and keeps the others', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshwork-sweep-'))
    const databaseSchema =
      dialect === 'postgres' ? `t_sweep_${process.pid}_${Date.now().toString(36)}` : undefined
    const first = await startTestServer(dialect, { dataDir, databaseSchema })
    const stranded = await signUp(first, 'stranded')
    const strandedId = stranded.authStore.record!.id
    await first.core.database.db
      .updateTable('user_balances')
      .set({ held: 5_250 })
      .where('user', '=', strandedId)
      .execute()
    await first.close() // a crash as far as the database is concerned: the hold stays

    const logged: string[] = []
    const spy = vi
      .spyOn(console, 'error')
      .mockImplementation((...args) => void logged.push(args.join(' ')))
    const second = await startTestServer(dialect, { dataDir, databaseSchema })
    spy.mockRestore()
    try {
      expect(await balanceOf(second, strandedId)).toMatchObject({ balance: 1000, held: 0 })
      expect(logged).toContainEqual(
        expect.stringMatching(
          new RegExp(`^LEDGER: released a stranded hold of 5.25 credits for user ${strandedId}`),
        ),
      )

      // A running request's hold is its reserve exactly; only an excess beside it goes.
      const stories = await modelId(second)
      const { node } = await hostileNode(second, stories)
      node.behaviour = streamThenWait('Once')
      const pb = await signUp(second, 'running')
      const user = pb.authStore.record!.id
      const conversation = await pb.collection('conversations').create({ title: 'New Chat', user })
      await postJson(
        second,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: stories, prompt: 'Hello there' },
        pb.authStore.token,
      )
      await node.firstJob()
      const reserve = (await balanceOf(second, user)).held as number
      expect(reserve).toBe(2 + 256)
      expect(await sweepStrandedHolds(second.core, () => {})).toEqual([])
      await second.core.database.db
        .updateTable('user_balances')
        .set({ held: (reserve + 7) * 1000 })
        .where('user', '=', user)
        .execute()
      expect(await sweepStrandedHolds(second.core, () => {})).toEqual([
        { user, held: (reserve + 7) * 1000, reserved: reserve * 1000 },
      ])
      expect((await balanceOf(second, user)).held).toBe(reserve)
      await expectAuditPasses(second)
      node.kill()
    } finally {
      await second.stop()
    }
  })

  it("releases a hold kept for a deleted request's charge that never came, uncharged, past the bound", async () => {
    const server = await startTestServer(dialect)
    try {
      const stories = await modelId(server)
      const { node } = await hostileNode(server, stories)
      node.behaviour = streamThenWait('Once upon a time there was a dragon')
      const pb = await signUp(server, 'abandoned')
      const user = pb.authStore.record!.id
      const conversation = await pb.collection('conversations').create({ title: 'New Chat', user })
      const sent = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: stories, prompt: 'Hello there' },
        pb.authStore.token,
      )
      const request = String(sent.body.request_id)
      await waitUntil(
        async () => (await pb.collection('requests').getOne(request)).status === 'processing',
        10_000,
        'the answer under way',
      )
      const reserve = (await balanceOf(server, user)).held as number
      // The charge never comes: every attempt to take the kept hold fails (as when the process
      // running the job dies first).
      const faults = DbFaults.install(server)
      faults.fail(/^delete _deletion_holds$/)
      await pb.collection('conversations').delete(conversation.id)
      await waitUntil(
        () => faults.count(/^delete _deletion_holds$/) > 0,
        10_000,
        'the charge tried',
      )
      faults.clear()
      // Kept, and accounted for: the audit passes with a hold awaiting its charge.
      expect(await balanceOf(server, user)).toMatchObject({ balance: 1000, held: reserve })
      await expectAuditPasses(server)
      const logged: string[] = []
      const log = (line: string) => void logged.push(line)
      expect(await sweepDeletionHolds(server.core, { log })).toEqual([])
      // Just within the bound: still kept.
      const db = server.core.database.db
      const age = (ms: number) =>
        db
          .updateTable('_deletion_holds')
          .set({ created: formatDate(new Date(Date.now() - ms)) })
          .where('id', '=', request)
          .execute()
      await age(DELETION_HOLD_BOUND_MS - 10_000)
      expect(await sweepDeletionHolds(server.core, { log })).toEqual([])
      expect(await sweepStrandedHolds(server.core, log)).toEqual([])
      expect((await balanceOf(server, user)).held).toBe(reserve)
      // Past it: released, nothing charged, said loudly.
      await age(DELETION_HOLD_BOUND_MS + 1_000)
      expect(await sweepDeletionHolds(server.core, { log })).toEqual([
        { request, user, amount: reserve * 1000 },
      ])
      expect(logged).toEqual([
        `LEDGER: released uncharged a hold of ${reserve} credits for user ${user} kept for deleted request ${request}, whose charge never came`,
      ])
      expect(await balanceOf(server, user)).toMatchObject({ balance: 1000, held: 0 })
      expect((await txsOf(server, user)).map((t) => t.type)).toEqual(['credit_admin'])
      await expectAuditPasses(server)
      node.kill()
    } finally {
      await server.stop()
    }
  })
})
