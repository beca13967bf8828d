/**
 * @module /api/collections/{collection}/auth-with-password and auth-refresh.
 */
import type { Hono } from 'hono'
import { z } from 'zod'
import type { CoreApp } from '../core/app.ts'
import { requireCollection } from '../core/collections/registry.ts'
import { ApiError } from '../tools/api-error.ts'
import { parseBody } from './body-schema.ts'
import { callerOf, clientAddress } from './caller.ts'
import { limitText, MAX_SHORT_TEXT } from './input-limits.ts'
import { checkFields, respond } from './record-crud.ts'
import { readBody } from './request-body.ts'

/** auth-with-password's body: either missing (or not text) is PocketBase's "Cannot be blank." */
const loginBodySchema = z.object({ identity: z.string().min(1), password: z.string().min(1) })
const blank = { code: 'validation_required', message: 'Cannot be blank.' }

export function bindRecordAuth(app: Hono, core: CoreApp) {
  app.post('/api/collections/:collection/auth-with-password', async (c) => {
    requireAuthCollection(c.req.param('collection'))
    checkFields(c)
    const body = await readBody(c)
    limitText(body, { identity: MAX_SHORT_TEXT, password: MAX_SHORT_TEXT })
    const login = parseBody(loginBodySchema, body, { other: blank })
    const result = await core.auth.loginWithPassword(
      login.identity,
      login.password,
      clientAddress(c),
    )
    return respond(c, result)
  })

  app.post('/api/collections/:collection/auth-refresh', async (c) => {
    const collection = requireAuthCollection(c.req.param('collection'))
    const caller = await callerOf(c, core.auth)
    return respond(c, await core.auth.refresh(caller, collection.name))
  })

  app.get('/api/collections/:collection/auth-methods', (c) => {
    requireAuthCollection(c.req.param('collection'))
    return c.json({
      password: { enabled: true, identityFields: ['email'] },
      oauth2: { enabled: false, providers: [] },
      mfa: { enabled: false, duration: 0 },
      otp: { enabled: false, duration: 0 },
    })
  })
}

function requireAuthCollection(name: string) {
  const collection = requireCollection(name)
  if (collection.type !== 'auth')
    throw new ApiError(404, 'Missing or invalid auth collection context.')
  return collection
}
