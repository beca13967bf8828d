/**
 * Password guessing through the account's own update: `PATCH /api/collections/users/records/{id}`
 * with `password`, `passwordConfirm` and a guessed `oldPassword` checks the guess against the
 * stored hash. Whoever holds a session token (a stolen one: its owner may change the password,
 * see threat-model.md) could guess the password there without limit, past the per-account and
 * per-address counts that guard sign-in, and turn a token that expires into the password itself.
 * Each guess is a password hash's work too, for nobody's sign-in. Now a guess there counts as a
 * sign-in attempt on the account and from the address, with the same delays and 429.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, startTestServer, type TestServer } from '../harness.ts'

describe.each(dialects)('[%s] guessing the password through the update', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect, {
      loginThrottle: { freeAttempts: 100, perAddress: 10, perAccount: 5 },
    })
  })
  afterAll(() => server.stop())

  const guess = (id: string, token: string, oldPassword: string) =>
    fetch(`${server.url}/api/collections/users/records/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', authorization: token },
      body: JSON.stringify({
        password: 'newpassword1',
        passwordConfirm: 'newpassword1',
        oldPassword,
      }),
    })

  it('counts each guess as a sign-in attempt on the account', async () => {
    const pb = server.client()
    const email = `guessed${Date.now()}@example.com`
    await pb
      .collection('users')
      .create({ email, password: 'password123', passwordConfirm: 'password123' })
    await pb.collection('users').authWithPassword(email, 'password123')
    const id = pb.authStore.record!.id
    const token = pb.authStore.token

    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push((await guess(id, token, `guess-${i}-xx`)).status)
    expect(statuses).toEqual([400, 400, 400, 400, 400, 429, 429, 429])
    // The right password too waits for the window: the account's guesses are used up.
    expect((await guess(id, token, 'password123')).status).toBe(429)
    const login = await fetch(`${server.url}/api/collections/users/auth-with-password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ identity: email, password: 'password123' }),
    })
    expect(login.status).toBe(429)
  })

  it('a right old password is no failure, and an update without a password is not counted', async () => {
    const pb = server.client()
    const email = `changer${Date.now()}@example.com`
    await pb
      .collection('users')
      .create({ email, password: 'password123', passwordConfirm: 'password123' })
    await pb.collection('users').authWithPassword(email, 'password123')
    const id = pb.authStore.record!.id
    for (let i = 0; i < 8; i++) await pb.collection('users').update(id, { name: `name ${i}` })
    expect((await guess(id, pb.authStore.token, 'password123')).status).toBe(200)
    await pb.collection('users').authWithPassword(email, 'newpassword1')
    for (let i = 0; i < 3; i++) {
      const next = i % 2 ? 'newpassword1' : 'newpassword2'
      const old = i % 2 ? 'newpassword2' : 'newpassword1'
      const res = await fetch(`${server.url}/api/collections/users/records/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', authorization: pb.authStore.token },
        body: JSON.stringify({ password: next, passwordConfirm: next, oldPassword: old }),
      })
      expect(res.status).toBe(200)
      await pb.collection('users').authWithPassword(email, next)
    }
  })
})
