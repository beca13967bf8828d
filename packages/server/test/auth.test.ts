import { ClientResponseError } from 'pocketbase'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'

describe.each(dialects)('auth [%s]', (dialect) => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer(dialect)
  })
  afterAll(() => server.stop())

  it('registers a user with name defaulting to the e-mail prefix, hiding the e-mail from guests', async () => {
    const pb = server.client()
    const created = await pb.collection('users').create({
      email: 'ada.lovelace@example.com',
      password: 'password123',
      passwordConfirm: 'password123',
    })
    expect(created.id).toMatch(/^[a-z0-9]{15}$/)
    expect(created.name).toBe('ada.lovelace')
    expect(created.email).toBeUndefined()
    expect(created.password).toBeUndefined()
    expect(created.tokenKey).toBeUndefined()
    expect(created.created).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  it('signs in with a password and returns a JWT and the record with its e-mail', async () => {
    const pb = server.client()
    await pb.collection('users').create({
      email: 'grace@example.com',
      password: 'password123',
      passwordConfirm: 'password123',
      name: 'Grace',
    })
    const auth = await pb.collection('users').authWithPassword('grace@example.com', 'password123')
    expect(auth.token.split('.')).toHaveLength(3)
    expect(auth.record.email).toBe('grace@example.com')
    expect(auth.record.name).toBe('Grace')
    expect(pb.authStore.isValid).toBe(true)
  })

  it('gives a new user 1000 credits as an Initial credits transaction and matching balance', async () => {
    const pb = await signUp(server)
    const userId = pb.authStore.record!.id
    const balance = await pb.collection('user_balances').getFirstListItem(`user = "${userId}"`)
    expect(balance.balance).toBe(1000)
    const txs = await pb.collection('user_credit_txs').getFullList({ filter: `user = "${userId}"` })
    expect(txs).toHaveLength(1)
    expect(txs[0]).toMatchObject({
      type: 'credit_admin',
      amount: 1000,
      description: 'Initial credits',
    })
  })

  it('refreshes a token and rejects refresh without one', async () => {
    const pb = await signUp(server)
    const refreshed = await pb.collection('users').authRefresh()
    expect(refreshed.record.id).toBe(pb.authStore.record!.id)
    const anon = server.client()
    const err = await anon
      .collection('users')
      .authRefresh()
      .catch((e) => e)
    expect(err).toBeInstanceOf(ClientResponseError)
    expect(err.status).toBe(401)
  })

  it('accepts the token with a Bearer prefix too', async () => {
    const pb = await signUp(server)
    const res = await fetch(
      `${server.url}/api/collections/users/records/${pb.authStore.record!.id}`,
      {
        headers: { Authorization: `Bearer ${pb.authStore.token}` },
      },
    )
    expect(res.status).toBe(200)
  })

  it('treats an invalid token as a guest', async () => {
    const res = await fetch(`${server.url}/api/collections/users/records`, {
      headers: { Authorization: 'garbage.token.here' },
    })
    expect(res.status).toBe(200)
    expect((await res.json()).items).toEqual([])
  })

  it('answers wrong credentials with 400 Failed to authenticate', async () => {
    const pb = server.client()
    await pb.collection('users').create({
      email: 'wrong@example.com',
      password: 'password123',
      passwordConfirm: 'password123',
    })
    const err = await pb
      .collection('users')
      .authWithPassword('wrong@example.com', 'nope-nope-nope')
      .catch((e) => e)
    expect(err.status).toBe(400)
    expect(err.response).toEqual({ data: {}, message: 'Failed to authenticate.', status: 400 })
    const unknown = await pb
      .collection('users')
      .authWithPassword('nobody@example.com', 'password123')
      .catch((e) => e)
    expect(unknown.status).toBe(400)
  })

  it('reports validation errors in PocketBase shape', async () => {
    const pb = server.client()
    await pb.collection('users').create({
      email: 'taken@example.com',
      password: 'password123',
      passwordConfirm: 'password123',
    })
    const taken = await pb
      .collection('users')
      .create({
        email: 'taken@example.com',
        password: 'password123',
        passwordConfirm: 'password123',
      })
      .catch((e) => e)
    expect(taken.status).toBe(400)
    expect(taken.response.message).toBe('Failed to create record.')
    expect(taken.response.data.email.code).toBe('validation_not_unique')

    const short = await pb
      .collection('users')
      .create({ email: 'short@example.com', password: 'short', passwordConfirm: 'short' })
      .catch((e) => e)
    expect(short.response.data.password.code).toBe('validation_min_text_constraint')

    const bad = await pb
      .collection('users')
      .create({ email: 'not-an-email', password: 'password123', passwordConfirm: 'password123' })
      .catch((e) => e)
    expect(bad.response.data.email.code).toBe('validation_is_email')

    const mismatch = await pb
      .collection('users')
      .create({ email: 'mm@example.com', password: 'password123', passwordConfirm: 'password124' })
      .catch((e) => e)
    expect(mismatch.response.data).toEqual({
      passwordConfirm: { code: 'validation_values_mismatch', message: "Values don't match." },
    })

    const missing = await pb
      .collection('users')
      .authWithPassword('', '')
      .catch((e) => e)
    expect(missing.status).toBe(400)
    expect(Object.keys(missing.response.data).sort()).toEqual(['identity', 'password'])
  })

  it('does not let a user verify themselves', async () => {
    const pb = server.client()
    const err = await pb
      .collection('users')
      .create({
        email: 'v@example.com',
        password: 'password123',
        passwordConfirm: 'password123',
        verified: true,
      })
      .catch((e) => e)
    expect(err.status).toBe(400)
    expect(err.response.data.verified.code).toBe('validation_values_mismatch')
  })

  it('revokes old tokens when the password changes', async () => {
    const pb = await signUp(server)
    const oldToken = pb.authStore.token
    const id = pb.authStore.record!.id
    // A read of the record with the old token: the read shortcut remembers it as the last one.
    const read = () =>
      fetch(`${server.url}/api/collections/users/records/${id}`, {
        headers: { Authorization: oldToken },
      })
    expect((await read()).status).toBe(200)
    const noOld = await pb
      .collection('users')
      .update(id, { password: 'newpassword1', passwordConfirm: 'newpassword1' })
      .catch((e) => e)
    expect(noOld.response.data.oldPassword.code).toBe('validation_invalid_old_password')
    await pb.collection('users').update(id, {
      oldPassword: 'password123',
      password: 'newpassword1',
      passwordConfirm: 'newpassword1',
    })
    const res = await fetch(`${server.url}/api/collections/users/auth-refresh`, {
      method: 'POST',
      headers: { Authorization: oldToken },
    })
    expect(res.status).toBe(401)
    expect((await read()).status).toBe(404)
  })

  it('slows down and then refuses repeated failed logins from one address', async () => {
    const pb = server.client()
    const started = Date.now()
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) {
      const err = await pb
        .collection('users')
        .authWithPassword('brute@example.com', `guess-${i}-xx`)
        .catch((e) => e)
      statuses.push(err.status)
    }
    expect(statuses.every((s) => s === 400)).toBe(true)
    // attempts 6, 7 and 8 wait 250 + 500 + 1000 ms before answering
    expect(Date.now() - started).toBeGreaterThanOrEqual(1700)
  }, 30_000)
})
