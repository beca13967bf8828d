import { describe, expect, it } from 'vitest'
import { JOB_REJECT_REASONS } from './job-reject.ts'
import { estimateTokens } from './token-estimate.ts'
import { jobRejectedFrameSchema, NODE_TEXT_LIMITS } from './node-protocol.ts'

describe('the shared contracts', () => {
  it('estimates one token per 4 characters, rounded down', () => {
    expect([0, 3, 4, 7, 8, 401].map((n) => estimateTokens('x'.repeat(n)))).toEqual([
      0, 0, 1, 1, 2, 100,
    ])
  })

  it('has reject reasons that are distinct and fit a job_rejected frame', () => {
    const reasons = Object.values(JOB_REJECT_REASONS)
    expect(new Set(reasons).size).toBe(reasons.length)
    for (const reason of reasons) {
      expect(reason.length).toBeLessThanOrEqual(NODE_TEXT_LIMITS.reason)
      expect(
        jobRejectedFrameSchema.parse({ type: 'job_rejected', job_id: 'j1', reason }),
      ).toMatchObject({ reason })
    }
  })
})
