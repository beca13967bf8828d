/**
 * @module A real reverse proxy in front of a coordinator (Debian's nginx), and HTTP requests sent
 * from a chosen loopback address, so tests can tell a trusted proxy (127.0.0.2, the address nginx
 * connects from) from clients (127.0.0.3, 127.0.0.4, ...) on one machine: Linux answers every
 * 127.0.0.0/8 address on the loopback interface.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const PROXY_ADDRESS = '127.0.0.2'

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Record<string, unknown>
}

/** One request from `localAddress` (JSON in and out). */
export function requestFrom(
  localAddress: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Answer> {
  const data = options.body === undefined ? undefined : JSON.stringify(options.body)
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? (data ? 'POST' : 'GET'),
        localAddress,
        headers: { ...(data ? { 'content-type': 'application/json' } : {}), ...options.headers },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text ? JSON.parse(text) : {},
          }),
        )
      },
    )
    req.on('error', reject)
    req.end(data)
  })
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * nginx on 127.0.0.1 proxying everything to `upstream` from PROXY_ADDRESS, adding the client to
 * X-Forwarded-For and passing the host it was asked for; it says the client used https (as a
 * proxy terminating TLS would).
 */
export async function startNginx(
  upstream: string,
): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'meshwork-nginx-'))
  const port = await freePort()
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
pid ${dir}/nginx.pid;
error_log stderr;
events {}
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass ${upstream};
      proxy_bind ${PROXY_ADDRESS};
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Proto https;
    }
  }
}
`,
  )
  const child = spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir, '-e', 'stderr'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let errors = ''
  child.stderr.on('data', (d) => (errors += d))
  const url = `http://127.0.0.1:${port}`
  // Ready when it answers (a 404 or the coordinator's answer, whichever route).
  const deadline = Date.now() + 15_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${errors}`)
    const ok = await fetch(`${url}/api/health`).then(
      () => true,
      () => false,
    )
    if (ok) break
    if (Date.now() > deadline) throw new Error(`nginx did not start: ${errors}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    url,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
