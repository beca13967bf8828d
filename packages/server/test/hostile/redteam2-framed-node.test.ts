/**
 * Red team: a user who pays for answers and would get them back if the node failed a spot check
 * (a failure reverses a probation node's held earnings to its payers) chooses, through /v1, the
 * sampling the spot check must model: penalties at their extremes, a narrow top_p, temperature 2,
 * stop sequences, a seed. An honest node (real llama.cpp, stories260K) must pass every check.
 * Every answer is checked (rates 1), SQLite.
 */
import OpenAI from 'openai'
import { setTrusted } from '../../src/cli/node-trust.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LlamaAgents } from '../support/llama-agents.ts'
import { createLlamaEngine } from '@meshwork/node'
import { modelMirror as mirror } from '@meshwork/test-kit'
import { signUp, startTestServer, type TestServer } from '../harness.ts'
import { modelId } from '../fixtures.ts'
import { adjustBalance, expectAuditPasses, txsOf } from '../support/ledger.ts'
import type { AnsweredRequest, SpotCheckOutcome } from '../../src/core/verification/spot-checks.ts'

describe('red team: a user choosing sampling to frame an honest node', () => {
  const dialect = 'sqlite' as const
  let server: TestServer
  let stories: string
  const agents = new LlamaAgents(
    () => server,
    () => stories,
  )
  const outcomes: Array<{ answered: AnsweredRequest; outcome: SpotCheckOutcome }> = []

  beforeAll(async () => {
    server = await startTestServer(
      dialect,
      { modelMirror: mirror },
      {
        network: {
          canaries: { tickMs: 0 },
          spotChecks: { probationRate: 1, verifiedRate: 1, minGapMs: 0 },
          scheduler: { stallMs: 5000, offerTimeoutMs: 5000 },
        },
      },
    )
    server.network.spotChecks.onChecked = (answered, outcome) =>
      outcomes.push({ answered, outcome })
    stories = await modelId(server)
    // The reference: the operator's node, scoring with 2 threads, trusted, taking no user jobs.
    const operator = await signUp(server, 'operator')
    const reference = createLlamaEngine({ gpu: false, threads: 2 })
    const referenceId = (await agents.start(operator, { threads: 2, engine: reference })).nodeId
    await operator.collection('nodes').update(referenceId, { is_active: false })
    await setTrusted(server.core.database.db, referenceId, true)
  }, 120_000)
  afterAll(async () => {
    await agents.stop()
    await server?.stop()
  })

  it('an honest node answering extreme /v1 sampling is never failed by a spot check', async () => {
    const owner = await signUp(server, 'honest')
    const { nodeId } = await agents.start(owner)
    const payer = await signUp(server, 'framer')
    await adjustBalance(server, payer.authStore.record!.id, 100_000)
    const res = await fetch(new URL('/api/keys', server.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: payer.authStore.token },
      body: JSON.stringify({ name: 'frame' }),
    })
    const { key } = (await res.json()) as { key: string }
    const client = new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 })
    const cases: Array<Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>> = [
      { temperature: 2 },
      { temperature: 1, frequency_penalty: 2, presence_penalty: 2 },
      { temperature: 1, frequency_penalty: -2, presence_penalty: -2 },
      { temperature: 1.5, top_p: 0.05 },
      { temperature: 0.8, top_p: 1, seed: 7 },
      { temperature: 1, stop: ['.', ' the'] },
      { temperature: 2, frequency_penalty: 2 },
      { temperature: 0.3, presence_penalty: -2 },
    ]
    const seen: string[] = []
    for (const extra of cases) {
      const answer = await client.chat.completions.create({
        model: 'stories260K',
        messages: [{ role: 'user', content: 'Tell me a story about a cat.' }],
        ...extra,
      })
      await server.network.spotChecks.settled()
      const last = outcomes.at(-1)
      seen.push(
        `${JSON.stringify(extra)} -> ${last?.outcome.status} ${JSON.stringify(last?.outcome)} ${JSON.stringify(answer.choices[0].message.content?.slice(0, 40))}`,
      )
    }
    const checks = await server.core.database.db
      .selectFrom('_spot_checks')
      .selectAll()
      .where('node', '=', nodeId)
      .execute()
    expect(checks, seen.join('\n')).toHaveLength(cases.length)
    expect(
      checks.filter((c) => c.status === 'failed'),
      seen.join('\n'),
    ).toEqual([])
    const refunds = (await txsOf(server, payer.authStore.record!.id)).filter(
      (t) => t.type === 'credit_inference_reversal',
    )
    expect(refunds).toEqual([])
    await expectAuditPasses(server)
  }, 300_000)
})
