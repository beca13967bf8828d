/**
 * Closing the coordinator (the end of a drain, or Ctrl-C) lets the requests it is answering finish
 * before the database goes, for a bounded moment. Before, their connections were cut and the
 * database closed under them: a write in flight was answered with nothing (a 502 behind the
 * balancer) and logged as a 500 "driver has already been destroyed" (`npm run chaos` draining
 * coordinators). SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest'
import { dialects, signUp, startTestServer } from './harness.ts'
import { DbFaults } from './support/db-faults.ts'
import { waitUntil } from './support/network.ts'

describe.each(dialects)('[%s] closing with a request in flight', (dialect) => {
  it('answers it before the database closes', async () => {
    const server = await startTestServer(dialect)
    let stopped: Promise<void> | null = null
    try {
      const pb = await signUp(server, 'inflight')
      const faults = DbFaults.install(server)
      faults.delay(/^insert conversations$/, 500)
      const creating = pb.collection('conversations').create({ title: 'Last words' })
      await waitUntil(() => faults.delaying.get('insert conversations') === 1, 5000, 'in flight')
      stopped = server.stop()
      const created = await creating
      expect(created).toMatchObject({ title: 'Last words' })
    } finally {
      await (stopped ?? server.stop())
    }
  })
})
