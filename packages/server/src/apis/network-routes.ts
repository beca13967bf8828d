/**
 * @module HTTP routes of the inference network: the device-link flow (start, complete, wait),
 * chat send and retry. The node WebSocket is in node-gateway.ts, model downloads in
 * model-download.ts.
 */
import type { Context, Hono } from 'hono'
import { startFlowRequestSchema, waitFlowRequestSchema } from '@meshwork/protocol'
import type { CoreApp } from '../core/app.ts'
import { exactError } from '../core/chat/chat-service.ts'
import type { InferenceNetwork } from '../core/network/inference-network.ts'
import { DENIED_MESSAGE } from '../core/nodes/link-flows.ts'
import { ApiError, tooManyRequests, unauthorized } from '../tools/api-error.ts'
import { callerOf, clientAddress } from './caller.ts'
import { readBody } from './request-body.ts'

export function bindNetworkRoutes(app: Hono, core: CoreApp, network: InferenceNetwork) {
  app.post('/api/auth/start-flow', async (c) => {
    if (!network.startFlowLimit.take(clientAddress(c))) throw tooManyRequests()
    const body = startFlowRequestSchema.safeParse(await readBody(c))
    if (!body.success) throw new ApiError(400, 'Device name is required.')
    return c.json(await network.flows.start(body.data.device_name, publicBase(c)))
  })

  app.post('/api/auth/complete-flow', async (c) => {
    const body = await readBody(c)
    const token = typeof body.state_token === 'string' ? body.state_token : ''
    if (!token) throw exactError(400, 'Missing authorization token')
    // The signed-in user comes from the token, never from `user_info` in the body.
    const caller = await callerOf(c, core.auth)
    const user = caller.auth ? String(caller.auth.id) : ''
    if (!user) throw unauthorized()
    if (body.status === 'failed') {
      await network.flows.deny(
        token,
        user,
        typeof body.error === 'string' && body.error ? body.error : DENIED_MESSAGE,
      )
      return c.json({ status: 'failed', message: 'Authorization denied' })
    }
    const node = await network.flows.approve(token, user)
    return c.json({ status: 'approved', ...node })
  })

  app.post('/api/auth/wait-flow', async (c) => {
    const body = waitFlowRequestSchema.safeParse(await readBody(c))
    if (!body.success) throw new ApiError(400, 'Invalid authorization request.')
    return c.json(
      await network.flows.wait(
        body.data.state_token,
        body.data.device_secret,
        network.waitFlowTimeoutMs,
      ),
    )
  })

  app.post('/api/chat/send', async (c) => {
    const caller = await callerOf(c, core.auth)
    return c.json(await network.chat.send(caller, await readBody(c)))
  })

  app.post('/api/requests/retry', async (c) => {
    const caller = await callerOf(c, core.auth)
    return c.json(await network.chat.retry(caller, await readBody(c)))
  })
}

/** The origin the caller used, so the approve URL opens the same web app. */
function publicBase(c: Context): string {
  const url = new URL(c.req.url)
  const proto = c.req.header('x-forwarded-proto')
  const host = c.req.header('x-forwarded-host') ?? c.req.header('host')
  return `${proto ?? url.protocol.replace(':', '')}://${host ?? url.host}`
}
