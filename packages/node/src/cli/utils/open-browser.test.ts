/**
 * The approve URL comes from the server the owner typed, which may be hostile: the agent hands
 * nothing but an http(s) URL to the desktop, and never through a command shell.
 */
import { describe, expect, it } from 'vitest'
import { browserCommand } from './open-browser.ts'

describe('browserCommand', () => {
  it('opens http and https URLs with the platform opener', () => {
    expect(browserCommand('https://meshwork.example/auth/approve-node?t=1', 'linux')).toEqual([
      'xdg-open',
      ['https://meshwork.example/auth/approve-node?t=1'],
    ])
    expect(browserCommand('http://127.0.0.1:8090/a', 'darwin')).toEqual([
      'open',
      ['http://127.0.0.1:8090/a'],
    ])
  })

  it('opens nothing else: files, other schemes, option-like text', () => {
    for (const url of [
      'file:///etc/passwd',
      'smb://attacker.example/share/x.desktop',
      'javascript:alert(1)',
      '--help',
      'not a url',
    ]) {
      expect(browserCommand(url, 'linux')).toBeNull()
    }
  })

  it('on Windows goes through no command shell: cmd would run what follows & in the URL', () => {
    const [command, args] = browserCommand('http://evil.example/?a=1&calc.exe', 'win32')!
    expect(command).not.toMatch(/cmd/i)
    expect(command).toBe('rundll32')
    expect(args).toEqual(['url.dll,FileProtocolHandler', 'http://evil.example/?a=1&calc.exe'])
  })

  it('hands over the parsed URL, its control characters percent-encoded', () => {
    const [, args] = browserCommand('http://x.example/\x1b[2J', 'linux')!
    expect(args).toEqual(['http://x.example/%1B[2J'])
  })
})
