/**
 * One link flow, thousands of long polls: `POST /api/auth/wait-flow` needs no account, only the
 * state token and device secret that `start-flow` hands to anyone, and each poll read the flow's
 * row once a second for up to 25 s. Nothing bounded how many polls one flow could hold: 2,000 idle
 * sockets on one flow made the coordinator run 2,000 statements a second, for as long as they
 * were renewed (a flow lives 10 minutes, an address may start 30 of them per 10 minutes). An agent
 * waits with one poll at a time; now a flow holds at most a few, and more are answered 429 at
 * once. SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_WAITS_PER_FLOW } from '../../src/core/nodes/link-flows.ts'
import { dialects, signUp, startTestServer, type TestServer } from '../harness.ts'
import { postJson } from '../support/network.ts'

describe.each(dialects)('[%s] long polls on one link flow', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect)
  })
  afterAll(() => server.stop())

  it('a flow holds a few polls; the others are refused at once and the approval still arrives', async () => {
    const flow = (await postJson(server, '/api/auth/start-flow', { device_name: 'flood' })).body
    const wait = () => postJson(server, '/api/auth/wait-flow', flow)
    const polls = Array.from({ length: 200 }, wait)
    const refused = await Promise.race([
      Promise.all(polls.slice(MAX_WAITS_PER_FLOW)),
      new Promise<null>((r) => setTimeout(() => r(null), 5000)),
    ])
    // Before: all 200 held for 25 s, each reading the flow every second.
    expect(refused).not.toBeNull()
    expect(refused!.every((r) => r.status === 429)).toBe(true)
    const before = server.core.database.statements.count
    await new Promise((r) => setTimeout(r, 2000))
    expect(server.core.database.statements.count - before).toBeLessThan(50)
    // The owner approves: the polls held get the credential (once) or are told it was collected.
    const owner = await signUp(server, 'owner')
    const approve = await postJson(
      server,
      '/api/auth/complete-flow',
      { state_token: flow.state_token, user_info: {} },
      owner.authStore.token,
    )
    expect(approve.status).toBe(200)
    const held = await Promise.all(polls.slice(0, MAX_WAITS_PER_FLOW))
    expect(held.filter((r) => r.status === 200 && r.body.credential)).toHaveLength(1)
    // Once they are answered, a poll is taken again.
    expect((await wait()).status).toBe(400)
  })
})
