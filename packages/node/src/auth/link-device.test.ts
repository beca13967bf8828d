import { afterEach, describe, expect, it } from 'vitest'
import { startFakeLinkServer, type FakeLinkServer } from '../test-support/fake-link-server.ts'
import { LinkDeniedError, LinkExpiredError, LinkStartError, linkDevice } from './link-device.ts'

describe('linkDevice', () => {
  let server: FakeLinkServer | undefined
  afterEach(() => server?.close())

  it('polls while pending and resolves with the credential on approval', async () => {
    server = await startFakeLinkServer('approve', 3)
    const urls: string[] = []
    const linked = await linkDevice({
      server: server.url,
      deviceName: 'my box',
      onApproveUrl: (u) => urls.push(u),
      minPollIntervalMs: 5,
    })
    expect(linked).toEqual({ nodeId: 'node_abc', credential: 'cred_xyz' })
    expect(server.startBodies).toEqual([{ device_name: 'my box' }])
    expect(server.waitCalls).toBe(4)
    expect(urls).toEqual([`${server.url}/auth/approve-node?token=st_123&device=my%20box`])
  })

  it('asks again when the coordinator holds too many polls of the flow (429)', async () => {
    server = await startFakeLinkServer('approve', 1, 2)
    const linked = await linkDevice({
      server: server.url,
      deviceName: 'my box',
      onApproveUrl: () => {},
      minPollIntervalMs: 5,
      retryDelayMs: 5,
    })
    expect(linked).toEqual({ nodeId: 'node_abc', credential: 'cred_xyz' })
    expect(server.waitCalls).toBe(4)
  })

  it('tells denial, expiry and an unreachable coordinator apart', async () => {
    server = await startFakeLinkServer('deny', 0)
    const denied = linkDevice({ server: server.url, deviceName: 'x', onApproveUrl: () => {} })
    await expect(denied).rejects.toBeInstanceOf(LinkDeniedError)
    await expect(denied).rejects.toThrow('User denied authorization')
    await server.close()

    server = await startFakeLinkServer('expire', 1)
    const expired = linkDevice({ server: server.url, deviceName: 'x', onApproveUrl: () => {} })
    await expect(expired).rejects.toBeInstanceOf(LinkExpiredError)

    // A server that answers `pending` forever past the expiry does not keep the node waiting.
    await server.close()
    server = await startFakeLinkServer('approve', 1_000_000)
    let clock = Date.now()
    const stuck = linkDevice({
      server: server.url,
      deviceName: 'x',
      onApproveUrl: () => {},
      minPollIntervalMs: 0,
      now: () => (clock += 60_000),
    })
    await expect(stuck).rejects.toBeInstanceOf(LinkExpiredError)

    const dead = linkDevice({
      server: 'http://127.0.0.1:9',
      deviceName: 'x',
      onApproveUrl: () => {},
    })
    await expect(dead).rejects.toBeInstanceOf(LinkStartError)
  })
})
