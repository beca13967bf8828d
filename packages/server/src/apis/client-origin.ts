/**
 * @module Who is on the other end of a request, behind proxies: the client address (for rate
 * limits and realtime limits) and the host and scheme the client used (for the approve URL).
 * Forwarding headers are believed only when the direct peer is a configured trusted proxy
 * (MESHWORK_TRUSTED_PROXIES), as PocketBase's trusted-proxy setting does; X-Forwarded-For is read
 * right to left past trusted hops (proxy-addr), so what a client writes into it is ignored.
 */
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import type { TLSSocket } from 'node:tls'
import proxyaddr from 'proxy-addr'

export interface ClientOrigin {
  /** The client's IP address (IPv4-mapped IPv6 written as IPv4), or 'unknown'. */
  address: string
  /** host[:port] the client asked for. */
  host: string
  proto: 'http' | 'https'
}

export type OriginResolver = (req: IncomingMessage) => ClientOrigin

export interface ProxySettings {
  trustedProxies?: string[]
  clientIpHeader?: string
}

const hostPattern = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$/

export function createOriginResolver(settings: ProxySettings = {}): OriginResolver {
  const proxies = settings.trustedProxies ?? []
  // An invalid entry throws here, at start-up, rather than trusting nothing (or everything) quietly.
  const trust = proxies.length ? proxyaddr.compile(proxies) : () => false
  const header = (settings.clientIpHeader ?? 'X-Forwarded-For').toLowerCase()
  return (req) => {
    const peer = req.socket?.remoteAddress ?? ''
    const trusted = peer !== '' && trust(peer, 0)
    const ownProto = (req.socket as TLSSocket | undefined)?.encrypted ? 'https' : 'http'
    const ownHost = validHost(req.headers.host) ?? 'localhost'
    if (!trusted) return { address: normalize(peer), host: ownHost, proto: ownProto }
    let address = peer
    if (header === 'x-forwarded-for') address = proxyaddr(req, trust)
    else {
      const value = firstValue(req.headers[header])
      if (value && isIP(value)) address = value
    }
    const proto = firstValue(req.headers['x-forwarded-proto'])?.toLowerCase()
    return {
      address: normalize(isIP(address) ? address : peer),
      host: validHost(firstValue(req.headers['x-forwarded-host'])) ?? ownHost,
      proto: proto === 'https' || proto === 'http' ? proto : ownProto,
    }
  }
}

function firstValue(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value
  return text?.split(',')[0]?.trim() || undefined
}

function validHost(value: string | undefined): string | undefined {
  return value && hostPattern.test(value) ? value : undefined
}

function normalize(address: string): string {
  if (!address) return 'unknown'
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}
