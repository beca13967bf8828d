import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { createOriginResolver } from './client-origin.ts'

const req = (peer: string, headers: Record<string, string> = {}) =>
  ({
    socket: { remoteAddress: peer },
    connection: { remoteAddress: peer },
    headers,
  }) as unknown as IncomingMessage

describe('client origin behind proxies', () => {
  it('believes nothing forwarded when no proxy is trusted', () => {
    const resolve = createOriginResolver()
    expect(
      resolve(
        req('::ffff:192.0.2.1', {
          'x-forwarded-for': '203.0.113.9',
          host: 'a.example',
          'x-forwarded-host': 'evil.example',
          'x-forwarded-proto': 'https',
        }),
      ),
    ).toEqual({
      address: '192.0.2.1',
      host: 'a.example',
      proto: 'http',
    })
  })

  it('reads X-Forwarded-For right to left past trusted hops (CIDRs and names)', () => {
    const resolve = createOriginResolver({ trustedProxies: ['10.0.0.0/8', 'loopback'] })
    const chain = { 'x-forwarded-for': '198.51.100.7, 203.0.113.5, 10.1.2.3' }
    expect(resolve(req('127.0.0.1', chain)).address).toBe('203.0.113.5')
    expect(resolve(req('10.9.9.9', chain)).address).toBe('203.0.113.5')
    // A peer outside the list: its headers are ignored.
    expect(resolve(req('192.0.2.50', chain)).address).toBe('192.0.2.50')
    // Garbage where the client should be: the peer stands in.
    expect(resolve(req('10.0.0.1', { 'x-forwarded-for': 'not-an-address' })).address).toBe(
      '10.0.0.1',
    )
  })

  it('reads another header as one address, when configured', () => {
    const resolve = createOriginResolver({
      trustedProxies: ['127.0.0.1'],
      clientIpHeader: 'X-Real-IP',
    })
    expect(
      resolve(req('127.0.0.1', { 'x-real-ip': '2001:db8::5', 'x-forwarded-for': '203.0.113.1' }))
        .address,
    ).toBe('2001:db8::5')
    expect(resolve(req('127.0.0.1', { 'x-real-ip': 'nonsense' })).address).toBe('127.0.0.1')
  })

  it('takes host and scheme from a trusted proxy, and only well-formed ones', () => {
    const resolve = createOriginResolver({ trustedProxies: ['127.0.0.1'] })
    expect(
      resolve(
        req('127.0.0.1', {
          host: 'internal:8090',
          'x-forwarded-host': 'meshwork.example, other',
          'x-forwarded-proto': 'HTTPS',
        }),
      ),
    ).toMatchObject({
      host: 'meshwork.example',
      proto: 'https',
    })
    expect(
      resolve(
        req('127.0.0.1', {
          host: 'internal:8090',
          'x-forwarded-host': 'evil.example/path?',
          'x-forwarded-proto': 'gopher',
        }),
      ),
    ).toMatchObject({
      host: 'internal:8090',
      proto: 'http',
    })
    expect(resolve(req('127.0.0.1', { host: '[::1]:8090' })).host).toBe('[::1]:8090')
  })

  it('refuses an invalid trusted-proxy entry at start-up', () => {
    expect(() => createOriginResolver({ trustedProxies: ['10.0.0.0/99'] })).toThrow()
  })
})
