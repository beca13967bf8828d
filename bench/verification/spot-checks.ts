/**
 * bench/verification, spot checks of sampled answers (docs/verification.md, "Spot checks of real
 * answers"): honest stories260K nodes sample canary-like prompts at several temperatures with the
 * network's default top-k / top-p / repeat penalty, dishonest set-ups answer the same prompts, and
 * a reference (stories260K, threads 2) scores every answer as a spot check does. Prints, per
 * set-up and request temperature, the per-answer statistic z = (S - E) / sqrt(V), the node-level
 * z over all its answers, and after how many answers (and tokens) a node would fail at the
 * thresholds in thresholds.ts.
 * Run: npm run bench:verification (this part: ANSWERS=40 per set-up, SEED=1).
 */
import { getLlama, LlamaLogLevel } from 'node-llama-cpp'
import { createLlamaEngine, type LlamaLoadedModel } from '@meshwork/node'
import type { Sampling } from '@meshwork/protocol'
import {
  canaryPrompt,
  seededRandom,
} from '../../packages/server/src/core/verification/canary-prompts.ts'
import {
  addSampled,
  fadeSampled,
  judgeSampled,
  NO_SAMPLED_EVIDENCE,
  sampledAnswerEvidence,
  sampledZ,
} from '../../packages/server/src/core/verification/sampled-evidence.ts'
import { DEFAULT_THRESHOLDS } from '../../packages/server/src/core/verification/thresholds.ts'
import { madeUpStories } from './made-up-stories.ts'
import { greedySampling } from '../lib/sampling.ts'

const MODELS = new URL('../../../shared/models/', import.meta.url).pathname
const stories = `${MODELS}stories260K.gguf`
const tiny = `${MODELS}llama-2-tiny-random.gguf`
const answers = Number(process.env.ANSWERS ?? 40)
/** Honest answers per temperature: more, for the honest tail the thresholds rest on. */
const honestAnswers = Number(process.env.HONEST_ANSWERS ?? 200)
const honestOnly = Boolean(process.env.HONEST_ONLY)
const seed = Number(process.env.SEED ?? 1)
const TEMPERATURES = process.env.TEMPERATURES
  ? process.env.TEMPERATURES.split(',').map(Number)
  : [0.5, 0.7, 1.0, 1.5]
const thresholds = DEFAULT_THRESHOLDS.sampled

interface Answer {
  text: string
  tokens: number[]
}
type Producer = (prompt: string, index: number) => Promise<Answer>

const vocab = await (
  await getLlama({ build: 'never', gpu: false, logLevel: LlamaLogLevel.error, logger: () => {} })
).loadModel({ modelPath: stories, vocabOnly: true })

async function loaded(path: string, threads: number) {
  const engine = createLlamaEngine({ gpu: false, threads })
  return engine.load({ id: 'm', name: 'stories260K', path })
}

const sampling = (temperature: number): Sampling => ({ ...greedySampling, temperature })

function generator(model: LlamaLoadedModel, temperature: number): Producer {
  return async (prompt) => {
    let text = ''
    const tokens: number[] = []
    await model.generate(
      { messages: [{ role: 'user', content: prompt }], sampling: sampling(temperature) },
      {
        onText: (t, ids) => {
          text += t
          tokens.push(...(ids ?? []))
        },
      },
    )
    return { text, tokens }
  }
}

/** Another model's text as the claimed model's tokens, cut to the budget as the coordinator does. */
const retokenized =
  (inner: Producer): Producer =>
  async (prompt, i) => {
    const ids = vocab.tokenize((await inner(prompt, i)).text).slice(0, greedySampling.max_tokens)
    return { text: vocab.detokenize(ids), tokens: ids }
  }

const madeUp: Producer = async (_prompt, i) => {
  const text = madeUpStories[i % madeUpStories.length]
  return { text, tokens: vocab.tokenize(text) }
}

const reference = await loaded(stories, 2)
const node = await loaded(stories, 1)
const wrong = await loaded(tiny, 1)
const random = seededRandom(seed)
const prompts = Array.from({ length: Math.max(answers, honestAnswers) }, () => canaryPrompt(random))

/** Each set-up answers at a request temperature; dishonest ones ignore it. */
const setups: Array<{ name: string; honest: boolean; make: (t: number) => Producer }> = [
  { name: 'honest (stories260K, threads 1)', honest: true, make: (t) => generator(node, t) },
  { name: 'made-up stories', honest: false, make: () => madeUp },
  {
    name: 'llama-2-tiny-random greedy, re-tokenized',
    honest: false,
    make: () => retokenized(generator(wrong, 0)),
  },
  {
    name: 'llama-2-tiny-random sampled (its temperature = the request), re-tokenized',
    honest: false,
    make: (t) => retokenized(generator(wrong, t)),
  },
]

const rows: Array<Record<string, unknown>> = []
for (const setup of setups.filter((s) => s.honest || !honestOnly))
  for (const t of TEMPERATURES) {
    const produce = setup.make(t)
    const perAnswer: number[] = []
    let evidence = NO_SAMPLED_EVIDENCE
    let failedAt: string = 'never'
    let positionsWithout = 0
    let positionsAll = 0
    let pooled = NO_SAMPLED_EVIDENCE
    for (const [i, prompt] of prompts.slice(0, setup.honest ? honestAnswers : answers).entries()) {
      const answer = await produce(prompt, i)
      if (!answer.tokens.length) continue
      const result = await reference.score!({
        messages: [{ role: 'user', content: prompt }],
        sampling: sampling(t),
        text: answer.text,
        tokens: answer.tokens,
      })
      if (setup.honest && !result.idsMatch)
        throw new Error("an honest answer's ids did not spell it")
      const one = sampledAnswerEvidence(result.positions)
      positionsAll += result.positions.length
      positionsWithout += result.positions.length - one.tokens
      perAnswer.push(sampledZ(one))
      evidence = addSampled(fadeSampled(evidence, thresholds.window), one)
      pooled = addSampled(pooled, one)
      if (failedAt === 'never' && judgeSampled(evidence, thresholds).outcome === 'fail')
        failedAt = `${perAnswer.length} (${Math.round(evidence.tokens)} tokens)`
    }
    const all = perAnswer.length
    const total = perAnswer.reduce((a, b) => a + b, 0)
    rows.push({
      setup: setup.name,
      temperature: t,
      answers: all,
      'tokens / answer': Math.round(positionsAll / all),
      'positions without expectation': positionsWithout,
      'z per answer: mean': round(total / all),
      sd: round(Math.sqrt(perAnswer.reduce((s, z) => s + (z - total / all) ** 2, 0) / (all - 1))),
      min: round(Math.min(...perAnswer)),
      max: round(Math.max(...perAnswer)),
      'per answer z < -3': perAnswer.filter((z) => z < -3).length,
      'node z, all answers pooled': round(sampledZ(pooled)),
      'node z, faded (as judged)': round(sampledZ(evidence)),
      'fails after answers': failedAt,
    })
  }
console.table(rows)
for (const row of rows) console.log(JSON.stringify(row))

function round(x: number) {
  return Math.round(x * 100) / 100
}
