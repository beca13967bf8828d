/**
 * bench/verification: the measurements behind the canary thresholds (docs/verification.md).
 * Canary prompts are answered greedily by stories260K under several honest set-ups and by several
 * dishonest ones, and every answer is scored by a reference (stories260K, threads 2, default
 * batch) with teacher forcing, exactly as the coordinator's reference nodes do. Prints, per
 * set-up, the per-position figures the judge uses.
 * Run: npm run bench:verification   (env: CANARIES=40 per set-up, SEED=1; the set-up that generates
 * with 2 threads, like the reference, runs SAME_CANARIES=5: on a small shared machine 2-thread
 * generation of a tiny model is very slow, see choose-threads.ts)
 */
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { createLlamaEngine, type LlamaLoadedModel } from '@meshwork/node'
import type { Sampling, ScoredPosition } from '@meshwork/protocol'
import {
  canaryPrompt,
  seededRandom,
} from '../../packages/server/src/core/verification/canary-prompts.ts'
import { madeUpStories } from './made-up-stories.ts'
import { greedySampling } from '../lib/sampling.ts'

const MODELS = new URL('../../../shared/models/', import.meta.url).pathname
const stories = `${MODELS}stories260K.gguf`
const tiny = `${MODELS}llama-2-tiny-random.gguf`
const canaries = Number(process.env.CANARIES ?? 40)
const sameCanaries = Number(process.env.SAME_CANARIES ?? 5)
const seed = Number(process.env.SEED ?? 1)
const sampling = greedySampling

interface Answer {
  prompt: string
  text: string
  tokens: number[]
}

type Producer = (prompt: string, index: number) => Promise<Answer>

const vocab = await (
  await getLlama({ build: 'never', gpu: false, logLevel: LlamaLogLevel.error, logger: () => {} })
).loadModel({ modelPath: stories, vocabOnly: true })

async function loaded(path: string, options: Parameters<typeof createLlamaEngine>[0] = {}) {
  const engine = createLlamaEngine({ gpu: false, threads: 1, ...options })
  const model = await engine.load({ id: 'm', name: 'stories260K', path })
  return { engine, model }
}

function generator(model: LlamaLoadedModel, overrides: Partial<Sampling> = {}): Producer {
  return async (prompt) => {
    let text = ''
    const tokens: number[] = []
    await model.generate(
      { messages: [{ role: 'user', content: prompt }], sampling: { ...sampling, ...overrides } },
      {
        onText: (t, ids) => {
          text += t
          tokens.push(...(ids ?? []))
        },
      },
    )
    return { prompt, text, tokens }
  }
}

/** The text another model wrote, presented with ids of the claimed model's vocabulary. */
const retokenized =
  (inner: Producer): Producer =>
  async (prompt, i) => {
    const a = await inner(prompt, i)
    return { ...a, tokens: vocab.tokenize(a.text) }
  }

const madeUp: Producer = async (prompt, i) => {
  const text = madeUpStories[i % madeUpStories.length]
  return { prompt, text, tokens: vocab.tokenize(text) }
}

const reference = await loaded(stories, { threads: 2 })
const node = await loaded(stories)
const setups: Array<{
  name: string
  honest: boolean
  count?: number
  make: () => Promise<Producer>
}> = [
  {
    name: 'honest, threads 2 (as the reference)',
    honest: true,
    count: sameCanaries,
    make: async () => generator(reference.model),
  },
  { name: 'honest, threads 1', honest: true, make: async () => generator(node.model) },
  {
    name: 'honest, threads 1, batch size 8',
    honest: true,
    make: async () => generator((await loaded(stories, { batchSize: 8 })).model),
  },
  {
    name: 'honest, threads 1, context 512',
    honest: true,
    make: async () => generator((await loaded(stories, { maxContextLength: 512 })).model),
  },
  {
    name: 'honest, threads 1, 2 parallel sequences',
    honest: true,
    make: async () => generator((await loaded(stories, { parallel: 2 })).model),
  },
  {
    name: 'sampled at temperature 0.7 (not greedy)',
    honest: false,
    make: async () => generator(node.model, { temperature: 0.7 }),
  },
  { name: 'made-up stories', honest: false, make: async () => madeUp },
  {
    name: 'llama-2-tiny-random text, re-tokenized as stories260K',
    honest: false,
    make: async () => retokenized(generator((await loaded(tiny)).model)),
  },
  {
    name: 'llama-2-tiny-random with its own ids (claims stories260K)',
    honest: false,
    make: async () => generator((await loaded(tiny)).model),
  },
]

const random = seededRandom(seed)
const prompts = Array.from({ length: canaries }, () => canaryPrompt(random))
const rows: Array<Record<string, unknown>> = []
for (const setup of setups) {
  const produce = await setup.make()
  const scored: Judged[][] = []
  let idsMatched = 0
  for (const [i, prompt] of prompts.slice(0, setup.count ?? canaries).entries()) {
    const answer = await produce(prompt, i)
    if (!answer.tokens.length) continue
    const result = await reference.model.score!({
      messages: [{ role: 'user', content: prompt }],
      sampling,
      text: answer.text,
      tokens: answer.tokens,
    })
    if (setup.honest && !result.idsMatch)
      throw new Error("an honest answer's ids did not spell its text")
    if (result.idsMatch) idsMatched++
    scored.push(result.positions.map((p, k) => ({ ...p, token: result.tokens[k] })))
  }
  rows.push({
    setup: setup.name,
    honest: setup.honest,
    'ids spell text': idsMatched,
    ...summarize(scored),
  })
}
console.table(rows)
for (const row of rows) console.log(JSON.stringify(row))

type Judged = ScoredPosition & { token: number }

function summarize(canaryPositions: Judged[][]) {
  const all = canaryPositions.flat()
  const agrees = (p: Judged) => p.top === p.token
  const disagreementsAbove = (lead: number) => {
    const clear = all.filter((p) => p.lead >= lead)
    return `${clear.filter((p) => !agrees(p)).length}/${clear.length}`
  }
  const perCanaryLp = canaryPositions.map((ps) => mean(ps.map((p) => p.logprob)))
  const disagreeLeads = all.filter((p) => !agrees(p)).map((p) => p.lead)
  return {
    canaries: canaryPositions.length,
    tokens: all.length,
    'disagree (all)': `${disagreeLeads.length}/${all.length}`,
    'max lead of a disagreement': round(Math.max(0, ...disagreeLeads)),
    'disagree, lead>=0.5': disagreementsAbove(0.5),
    'disagree, lead>=1': disagreementsAbove(1),
    'disagree, lead>=2': disagreementsAbove(2),
    'mean logprob': round(mean(all.map((p) => p.logprob))),
    'min canary mean logprob': round(Math.min(...perCanaryLp)),
    'max canary mean logprob': round(Math.max(...perCanaryLp)),
  }
}

function mean(xs: number[]) {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0
}
function round(x: number) {
  return Math.round(x * 1000) / 1000
}
