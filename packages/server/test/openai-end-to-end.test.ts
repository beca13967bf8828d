/**
 * The OpenAI-compatible API with the official `openai` client against a real coordinator and a
 * real node (@meshwork/node, llama.cpp, threads 1) serving stories260K (multiplier 1) and
 * llama-2-tiny-random (multiplier 2): what a program sees, and what it pays.
 */
import { join } from 'node:path'
import OpenAI from 'openai'
import type PocketBase from 'pocketbase'
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dialects, signUp, startTestServer, type TestServer } from './harness.ts'
import { modelId } from './fixtures.ts'
import {
  modelMirror,
  requireTestModels,
  startRealNode,
  type RealNode,
} from './support/real-node.ts'
import { holdingEngine, type HoldingControl } from './support/holding-engine.ts'
import { waitUntil } from './support/network.ts'

describe.each(dialects)('[%s] OpenAI API end to end with llama.cpp', (dialect) => {
  let server: TestServer
  let node: RealNode
  let pb: PocketBase
  let api: OpenAI
  /** Holds the node's next answer after a few pieces (aborts land mid-answer). */
  let hold: HoldingControl
  /** Input tokens as the coordinator counts them: its own tokenizer of each message's text. */
  let countInput: (file: string, contents: string[]) => Promise<number>

  beforeAll(async () => {
    requireTestModels()
    const llama = await getLlama({
      build: 'never',
      gpu: false,
      logLevel: LlamaLogLevel.error,
      logger: () => {},
    })
    countInput = async (file, contents) => {
      const vocab = await llama.loadModel({ modelPath: join(modelMirror, file), vocabOnly: true })
      return contents.reduce((n, c) => n + vocab.tokenize(c).length, 0)
    }
    server = await startTestServer(dialect, { modelMirror })
    const owner = await signUp(server, 'host')
    const held = holdingEngine()
    hold = held.control
    node = await startRealNode(
      server,
      owner,
      'Real box',
      [await modelId(server), await modelId(server, 'llama-2-tiny-random')],
      held.engine,
    )
    pb = await signUp(server, 'coder')
    const res = await fetch(new URL('/api/keys', server.url), {
      method: 'POST',
      headers: { authorization: pb.authStore.token, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'e2e' }),
    })
    const { key } = (await res.json()) as { key: string }
    api = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 })
  }, 120_000)
  afterAll(async () => {
    await node?.stop()
    await server?.stop()
  })

  /** The user's debit for a completion (the id is chatcmpl-<request id>). */
  async function debitFor(completionId: string) {
    const request = completionId.replace(/^chatcmpl-/, '')
    const rows = await pb
      .collection('user_credit_txs')
      .getFullList({ filter: pb.filter('request = {:request}', { request }) })
    return rows.filter((r) => r.type === 'debit_inference_request')
  }

  const story = (
    extra: Partial<OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming> = {},
  ) =>
    api.chat.completions.create({
      model: 'stories260K',
      messages: [{ role: 'user', content: 'Once upon a time there was a little dog named Max.' }],
      temperature: 1,
      max_tokens: 40,
      ...extra,
    })

  it('lists the served models', async () => {
    const { data } = await api.models.list()
    expect(data.map((m) => m.id).sort()).toEqual(['llama-2-tiny-random', 'stories260K'])
    expect(data.every((m) => m.object === 'model' && m.owned_by === 'meshwork')).toBe(true)
  })

  it('answers non-streamed, billed exactly its usage; the same seed gives the same answer', async () => {
    const first = await story({ seed: 7 })
    const text = first.choices[0].message.content!
    expect(text).toMatch(/\w+ \w+/)
    expect(first.usage!.prompt_tokens).toBe(
      await countInput('stories260K.gguf', ['Once upon a time there was a little dog named Max.']),
    )
    expect(first.usage!.completion_tokens).toBeGreaterThan(0)
    expect(first.usage!.completion_tokens).toBeLessThanOrEqual(40)
    expect(await debitFor(first.id)).toMatchObject([{ amount: first.usage!.total_tokens * 1 }])
    const again = await story({ seed: 7 })
    expect(again.choices[0].message.content).toBe(text)
    expect(again.id).not.toBe(first.id)
  })

  it('ends the answer before a stop sequence and says length when max_tokens ran out', async () => {
    const free = await story({ seed: 11, max_tokens: 60 })
    const text = free.choices[0].message.content!
    const words = text.trim().split(/\s+/)
    const stop = ` ${words[3]}`
    const cut = text.indexOf(stop)
    expect(cut).toBeGreaterThan(0)
    const stopped = await story({ seed: 11, max_tokens: 60, stop })
    expect(stopped.choices[0].message.content!.trimEnd()).toBe(text.slice(0, cut).trimEnd())
    expect(stopped.choices[0].finish_reason).toBe('stop')
    expect(stopped.usage!.completion_tokens).toBeLessThan(free.usage!.completion_tokens)
    expect(await debitFor(stopped.id)).toMatchObject([{ amount: stopped.usage!.total_tokens }])

    const short = await story({ max_completion_tokens: 5 })
    expect(short.choices[0].finish_reason).toBe('length')
    expect(short.usage!.completion_tokens).toBe(5)
  })

  it('streams several chunks and a usage chunk, billed usage x the multiplier (2)', async () => {
    const stream = await api.chat.completions.create({
      model: 'llama-2-tiny-random',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say something random please' },
      ],
      max_tokens: 60,
      stream: true,
      stream_options: { include_usage: true },
    })
    let text = ''
    let contentChunks = 0
    let usage: OpenAI.CompletionUsage | null | undefined = null
    let finish: string | null = null
    for await (const chunk of stream) {
      const c = chunk.choices[0]
      if (c?.delta.content) {
        text += c.delta.content
        contentChunks++
      }
      if (c?.finish_reason) finish = c.finish_reason
      if (chunk.usage) usage = chunk.usage
    }
    expect(contentChunks).toBeGreaterThan(1)
    expect(text.length).toBeGreaterThan(0)
    expect(['stop', 'length']).toContain(finish)
    expect(usage).toMatchObject({
      prompt_tokens: await countInput('llama-2-tiny-random.gguf', [
        'Be brief.',
        'Say something random please',
      ]),
    })
    expect(usage!.completion_tokens).toBeGreaterThan(0)
    const request = await server.core.database.db
      .selectFrom('requests')
      .selectAll()
      .where('user', '=', pb.authStore.record!.id)
      .orderBy('created', 'desc')
      .executeTakeFirstOrThrow()
    expect(request).toMatchObject({ response: text, status: 'completed', reserved: 0 })
    expect(await debitFor(`chatcmpl-${request.id}`)).toMatchObject([
      { amount: usage!.total_tokens * 2 },
    ])
    const balance = await pb.collection('user_balances').getFirstListItem('')
    expect(balance.held).toBe(0)
  })

  const PROMPT = 'Once upon a time there was a little dog named Max.'

  /** The node's jobs that it stopped because the coordinator told it to (`job_cancel`). */
  const cancelledJobs: string[] = []
  beforeAll(() => {
    node.agent.events.on('job', (e) => {
      if (e.kind === 'cancelled') cancelledJobs.push(e.jobId)
    })
  })

  /** The request, once it has ended cancelled; then what it cost and what stays held. */
  async function stoppedRequest(id: string) {
    const db = server.core.database.db
    const row = await waitUntil(
      async () => {
        const r = await db
          .selectFrom('requests')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirst()
        return r?.status === 'cancelled' && r
      },
      10_000,
      'the request cancelled',
    )
    const debits = await debitFor(`chatcmpl-${id}`)
    const balance = await pb.collection('user_balances').getFirstListItem('')
    return { row, debits, balance }
  }

  /** What every abort must show: the node stopped, the text so far kept, only it paid for. */
  async function expectStoppedAndBilled(id: string, received: string) {
    const { row, debits, balance } = await stoppedRequest(id)
    const job = await server.core.database.db
      .selectFrom('node_jobs')
      .select(['id', 'status'])
      .where('request', '=', id)
      .executeTakeFirstOrThrow()
    expect(job.status).toBe('cancelled')
    await waitUntil(
      () => cancelledJobs.includes(String(job.id)),
      10_000,
      'the node stopped the job',
    )
    const run = hold.runs.at(-1)!
    await waitUntil(() => run.aborted, 10_000, 'the engine aborted')
    const response = String(row.response)
    expect(response.startsWith(received)).toBe(true)
    expect(run.forwarded.startsWith(response)).toBe(true)
    expect(Number(row.tokens_input)).toBe(await countInput('stories260K.gguf', [PROMPT]))
    const output = Number(row.tokens_output)
    expect(output).toBeGreaterThan(0)
    // Only the part produced before the stop is paid: at most the tokens the node passed on.
    expect(output).toBeLessThanOrEqual(run.forwardedTokens)
    const cost = Number(row.tokens_input) + output // x multiplier 1
    expect(debits).toMatchObject([{ amount: cost }])
    expect(Number(row.reserved)).toBe(0)
    expect(balance.held).toBe(0)
  }

  it('a client that aborts mid-stream stops the node at once and pays only for what was produced', async () => {
    hold.next = { prompt: PROMPT, after: 4 }
    const controller = new AbortController()
    const stream = await api.chat.completions.create(
      {
        model: 'stories260K',
        messages: [{ role: 'user', content: PROMPT }],
        max_tokens: 200,
        seed: 3,
        stream: true,
        stream_options: { include_usage: true },
      },
      { signal: controller.signal },
    )
    let received = ''
    let id = ''
    try {
      for await (const chunk of stream) {
        id = chunk.id.replace(/^chatcmpl-/, '')
        received += chunk.choices[0]?.delta.content ?? ''
        if (received) controller.abort()
      }
    } catch (err) {
      if (!(err instanceof OpenAI.APIUserAbortError)) throw err
    }
    expect(received.length).toBeGreaterThan(0)
    await expectStoppedAndBilled(id, received)
  })

  it('a non-streamed call whose client gives up mid-answer is stopped and billed the same way', async () => {
    hold.next = { prompt: PROMPT, after: 4 }
    let seen: (id: string) => void = () => {}
    const partial = new Promise<string>((r) => (seen = r))
    await pb.collection('requests').subscribe('*', (e) => {
      if (e.record.is_partial && e.record.response) seen(e.record.id)
    })
    const controller = new AbortController()
    const call = api.chat.completions.create(
      {
        model: 'stories260K',
        messages: [{ role: 'user', content: PROMPT }],
        max_tokens: 200,
        seed: 4,
      },
      { signal: controller.signal },
    )
    const id = await partial
    await pb.collection('requests').unsubscribe()
    controller.abort()
    await expect(call).rejects.toBeInstanceOf(OpenAI.APIUserAbortError)
    await expectStoppedAndBilled(id, '')
  })
})
