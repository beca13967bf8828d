/**
 * Prometheus metrics at /api/metrics: absent unless a token is configured, then only for that
 * token, with HTTP traffic per route pattern and the network's state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import { postJson, servingNode, waitUntil } from './support/network.ts'

const token = 'metrics-token-0123456789'

/** The value of one sample line, e.g. `name{a="b"} 3`. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `))
  return line === undefined ? undefined : Number(line.split(' ').pop())
}

describe('metrics', () => {
  it('do not exist without MESHWORK_METRICS_TOKEN', async () => {
    const server = await startTestServer('sqlite')
    try {
      const res = await fetch(`${server.url}/api/metrics`, {
        headers: { Authorization: `Bearer ${token}` },
      })
      expect(res.status).toBe(404)
    } finally {
      await server.stop()
    }
  })

  describe('with a token', () => {
    let server: TestServer
    const scrape = async () => {
      const res = await fetch(`${server.url}/api/metrics`, {
        headers: { Authorization: `Bearer ${token}` },
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('text/plain')
      return res.text()
    }
    beforeAll(async () => {
      server = await startTestServer('sqlite', { metricsToken: token })
    })
    afterAll(() => server.stop())

    it('refuses a missing or wrong token with 401', async () => {
      for (const headers of [
        {},
        { Authorization: 'Bearer wrong' },
        { Authorization: token },
      ] as Array<Record<string, string>>) {
        const res = await fetch(`${server.url}/api/metrics`, { headers })
        expect(res.status).toBe(401)
        expect((await res.json()).status).toBe(401)
      }
    })

    it('count requests per route pattern and status, and time them', async () => {
      const pb = await signUp(server)
      for (let i = 0; i < 3; i++) await pb.collection('conversations').getList(1, 5)
      await fetch(`${server.url}/api/collections/nope/records`)
      const text = await scrape()
      const list = 'method="GET",route="/api/collections/:collection/records"'
      expect(sample(text, 'meshwork_http_requests_total', `${list},status="200"`)).toBe(3)
      expect(sample(text, 'meshwork_http_requests_total', `${list},status="404"`)).toBe(1)
      expect(sample(text, 'meshwork_http_request_duration_seconds_count', list)).toBe(4)
      expect(text).toContain('process_cpu_seconds_total')
    })

    it('count database statements: a list runs at least one, a create at least its transaction', async () => {
      const pb = await signUp(server, 'counted')
      const before = sample(await scrape(), 'meshwork_db_statements_total')!
      await pb.collection('conversations').getList(1, 5)
      const afterList = sample(await scrape(), 'meshwork_db_statements_total')!
      expect(afterList).toBeGreaterThan(before)
      await pb.collection('conversations').create({ title: 'Counted too' })
      // BEGIN, the insert and COMMIT at least.
      expect(
        sample(await scrape(), 'meshwork_db_statements_total')! - afterList,
      ).toBeGreaterThanOrEqual(3)
      // Without Redis there is no bus traffic to count.
      expect(
        sample(await scrape(), 'meshwork_bus_messages_total', 'direction="out"'),
      ).toBeUndefined()
    })

    it('show nodes, the scheduler and finished chat requests', async () => {
      const stories = await modelId(server)
      const { node } = await servingNode(server, stories)
      expect(sample(await scrape(), 'meshwork_nodes_connected', 'where="local"')).toBe(1)

      const pb = await signUp(server, 'chatter')
      const conversation = await pb.collection('conversations').create({ title: 'Counted' })
      const sent = await postJson(
        server,
        '/api/chat/send',
        { conversation_id: conversation.id, model_id: stories, prompt: 'Hi' },
        pb.authStore.token,
      )
      await waitUntil(
        async () =>
          (await pb.collection('requests').getOne(sent.body.request_id as string)).status ===
          'completed',
        5000,
        'completed',
      )
      const text = await scrape()
      expect(sample(text, 'meshwork_chat_requests_total', 'status="completed"')).toBe(1)
      expect(sample(text, 'meshwork_scheduler_requests', 'state="running"')).toBe(0)
      expect(sample(text, 'meshwork_realtime_clients')).toBe(0)
      node.kill()
    })
  })
})
