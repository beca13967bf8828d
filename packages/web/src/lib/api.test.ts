import { afterEach, describe, expect, it, vi } from 'vitest'
import { approveNode, denyNode, retryRequest, sendChat } from './api.ts'
import { ApiError } from './api-error.ts'
import { pb } from './pb.ts'

function mockFetch(status: number, body: string, statusText = '') {
  const fn = vi.fn(
    async (_url: string, _init: RequestInit) => new Response(body, { status, statusText }),
  )
  vi.stubGlobal('fetch', fn)
  return fn
}

describe('api helpers', () => {
  afterEach(() => {
    vi.unstubAllGlobals()
    pb.authStore.clear()
  })

  it('posts the chat body with the bearer token', async () => {
    pb.authStore.save('tok123', null)
    const fetchMock = mockFetch(
      200,
      JSON.stringify({ request_id: 'r1', status: 'queued', position: 0 }),
    )
    const input = { conversation_id: 'c1', model_id: 'm1', prompt: 'hi', temperature: 0.7 }
    await expect(sendChat(input)).resolves.toEqual({
      request_id: 'r1',
      status: 'queued',
      position: 0,
    })
    const [url, init] = fetchMock.mock.calls[0]
    expect(url).toMatch(/\/api\/chat\/send$/)
    expect(init.method).toBe('POST')
    expect((init.headers as Record<string, string>).Authorization).toBe('Bearer tok123')
    expect(JSON.parse(init.body as string)).toEqual(input)
  })
  it('validates conversation and model ids before calling', async () => {
    const fetchMock = mockFetch(200, '{}')
    await expect(
      sendChat({ conversation_id: '', model_id: 'm', prompt: 'x', temperature: 1 }),
    ).rejects.toThrow('Conversation ID is required')
    await expect(
      sendChat({ conversation_id: 'c', model_id: '', prompt: 'x', temperature: 1 }),
    ).rejects.toThrow('Model ID is required')
    expect(fetchMock).not.toHaveBeenCalled()
  })
  it('surfaces the PocketBase error message', async () => {
    mockFetch(
      403,
      JSON.stringify({
        status: 403,
        message: 'Conversation does not belong to current user',
        data: {},
      }),
    )
    const err = await retryRequest('r1').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect((err as ApiError).status).toBe(403)
    expect((err as ApiError).message).toBe('Conversation does not belong to current user')
  })
  it("falls back to 'HTTP {status}: {statusText}'", async () => {
    mockFetch(502, '<html>bad gateway</html>', 'Bad Gateway')
    await expect(retryRequest('r1')).rejects.toThrow('HTTP 502: Bad Gateway')
  })
  it('sends the approve and deny bodies of the device flow', async () => {
    const fetchMock = mockFetch(200, '{}')
    await approveNode('st1', { id: 'u1', email: 'a@b.c', name: 'a', credits: 5 })
    await denyNode('st2')
    expect(JSON.parse(fetchMock.mock.calls[0][1].body as string)).toEqual({
      state_token: 'st1',
      user_info: { id: 'u1', email: 'a@b.c', name: 'a', credits: 5 },
    })
    expect(JSON.parse(fetchMock.mock.calls[1][1].body as string)).toEqual({
      state_token: 'st2',
      status: 'failed',
      error: 'User denied authorization',
    })
  })
})
