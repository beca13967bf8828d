/**
 * @module Security headers on every response: no MIME sniffing, no referrer (approve URLs carry a
 * token), no framing anywhere (clickjacking of Approve Connection), and a Content-Security-Policy:
 * the API's answers may load nothing at all; the web app's pages load only their own files, with
 * the app's inline start-up script allowed by its hash. `e2e/tests/security-headers.test.ts`
 * checks that every screen of the built app runs under it without a violation.
 */
import { createHash } from 'node:crypto'
import type { ServerResponse } from 'node:http'

/** For everything that is not a page of the web app: JSON, streams, downloads. */
export const API_CSP =
  "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

/**
 * Headers every response carries, CORS first (any origin may call the API), as name, value, name,
 * value: the record-read shortcut sends them in its one `writeHead` (one call, not five).
 */
export const COMMON_HEADERS: readonly string[] = [
  'Access-Control-Allow-Origin',
  '*',
  'X-Content-Type-Options',
  'nosniff',
  'Referrer-Policy',
  'no-referrer',
  'X-Frame-Options',
  'DENY',
  'Content-Security-Policy',
  API_CSP,
]

/** COMMON_HEADERS set on Node's response, so they cost no Hono header work. */
export function setCommonHeaders(res: ServerResponse) {
  for (let i = 0; i < COMMON_HEADERS.length; i += 2)
    res.setHeader(COMMON_HEADERS[i], COMMON_HEADERS[i + 1])
}

/**
 * A page of the web app ready to serve: its HTML with a fresh nonce in a `csp-nonce` meta tag
 * (the app gives it to the library that injects <style> elements) and the policy to send with it.
 * Inline scripts of the build are allowed by their hashes, computed once per build.
 */
export function appPage(html: string): (nonce: string) => { html: string; csp: string } {
  const hashes = inlineScripts(html).map(
    (s) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`,
  )
  return (nonce) => ({
    html: html.replace(
      /<head(\s[^>]*)?>/i,
      (head) => `${head}<meta name="csp-nonce" content="${nonce}">`,
    ),
    csp: appCsp(hashes, nonce),
  })
}

function appCsp(scriptHashes: string[], nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' ${scriptHashes.join(' ')}`.trim(),
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/** The contents of the page's inline `<script>` elements (the build's own HTML, not user input). */
function inlineScripts(html: string): string[] {
  const scripts: string[] = []
  for (const m of html.matchAll(/<script(\s[^>]*)?>([\s\S]*?)<\/script>/gi)) {
    if (!/\bsrc\s*=/i.test(m[1] ?? '') && m[2].trim()) scripts.push(m[2])
  }
  return scripts
}
