import { afterEach, describe, expect, it, vi } from 'vitest'
import { loginUrlWithReturn, parseReturnParam } from './return-url.ts'

describe('parseReturnParam', () => {
  afterEach(() => vi.restoreAllMocks())

  it('returns null when absent', () => {
    expect(parseReturnParam(null)).toBeNull()
    expect(parseReturnParam('')).toBeNull()
  })
  it('decodes an encoded path', () => {
    expect(parseReturnParam('%2Fnodes%3Fx%3D1')).toBe('/nodes?x=1')
    expect(parseReturnParam('/profile')).toBe('/profile')
  })
  it('reduces a full URL to path, query and hash', () => {
    const raw = encodeURIComponent(
      'http://localhost:8090/auth/approve-node?token=abc&device=Mac#top',
    )
    expect(parseReturnParam(raw)).toBe('/auth/approve-node?token=abc&device=Mac#top')
    expect(parseReturnParam('https://evil.example/steal')).toBe('/steal')
  })
  it('keeps protocol-relative input on this origin', () => {
    expect(parseReturnParam('//evil.example/x')).toBe('/evil.example/x')
  })
  // Browsers read a backslash as '/' and drop tabs and newlines in URLs: these paths name another host,
  // and the router refused them with its error page in place of the app, right after sign-in.
  it('ignores paths that a browser would resolve to another host', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    for (const raw of ['/%5Cexample.org/x', '%2F%5Cexample.org', '/%09/example.org', '/\\evil'])
      expect(parseReturnParam(raw), raw).toBeNull()
    expect(warn).toHaveBeenCalledTimes(4)
    // A full URL whose path reads '//host' stays a path on this origin, as '//host' input does.
    expect(parseReturnParam('https://h//evil.example/x')).toBe('/evil.example/x')
    expect(parseReturnParam('http://h/%5Cevil')).toBe('/evil')
  })
  it('logs and ignores what cannot be parsed', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    expect(parseReturnParam('%E0%A4%A')).toBeNull()
    expect(parseReturnParam('javascript:alert(1)')).toBeNull()
    expect(warn).toHaveBeenCalledTimes(2)
  })
  it('round-trips through loginUrlWithReturn', () => {
    const url = loginUrlWithReturn('http://h/auth/approve-node?token=t1&device=My%20PC')
    const param = new URL(url, 'http://h').searchParams.get('return')
    expect(parseReturnParam(param)).toBe('/auth/approve-node?token=t1&device=My%20PC')
  })
})
