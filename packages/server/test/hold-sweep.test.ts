/**
 * The stranded-hold sweep: whatever a crash or a bug leaves held without an open request is
 * released at start-up (and hourly), loudly, while the holds of requests in progress are kept to
 * the unit. SQLite and PostgreSQL.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { sweepStrandedHolds } from '../src/core/ledger/hold-sweep.ts'
import { modelId } from './fixtures.ts'
import { dialects, signUp, startTestServer } from './harness.ts'
import { hostileNode, streamThenWait } from './support/hostile-node.ts'
import { balanceOf, expectAuditPasses } from './support/ledger.ts'
import { postJson } from './support/network.ts'

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
})
