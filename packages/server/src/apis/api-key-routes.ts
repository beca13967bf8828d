/**
 * @module `/api/keys`: a signed-in user creates, lists and revokes their API keys (issue 10). The
 * session token is required: an API key cannot manage keys.
 */
import type { Context, Hono } from 'hono'
import type { CoreApp } from '../core/app.ts'
import { createApiKey, listApiKeys, revokeApiKey } from '../core/api-keys/api-keys.ts'
import { unauthorized } from '../tools/api-error.ts'
import { callerOf } from './caller.ts'
import { readBody } from './request-body.ts'

export function bindApiKeyRoutes(app: Hono, core: CoreApp) {
  const db = core.database.db
  const signedIn = async (c: Context) => {
    const caller = await callerOf(c, core.auth)
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    return user
  }

  app.post('/api/keys', async (c) => {
    const user = await signedIn(c)
    return c.json(await createApiKey(core, user, await readBody(c)))
  })

  app.get('/api/keys', async (c) => c.json(await listApiKeys(db, await signedIn(c))))

  app.delete('/api/keys/:id', async (c) => {
    await revokeApiKey(core, await signedIn(c), c.req.param('id'))
    return c.body(null, 204)
  })
}
