import { describe, expect, it } from 'vitest'
import { DEFAULT_THRESHOLDS, thresholdsFor } from './thresholds.ts'

const STORIES_260K = '270CBA1BD5109F42D03350F60406024560464DB173C0E387D91F0426D3BD256D'

describe('the thresholds a node is judged by', () => {
  it("are the model's measured ones whatever backend the node claims", () => {
    const cpu = thresholdsFor(STORIES_260K, 'cpu-avx512')
    expect(cpu).toMatchObject({ honestDisagreeRate: 0.02, minMeanLogprob: -1 })
    for (const claim of ['cuda', 'metal', 'vulkan', 'unknown', 'anything at all'])
      expect(thresholdsFor(STORIES_260K, claim)).toEqual(cpu)
  })

  it('are the looser defaults for a model not measured', () => {
    expect(thresholdsFor('0'.repeat(64), 'cpu-avx2')).toEqual(DEFAULT_THRESHOLDS)
  })
})
