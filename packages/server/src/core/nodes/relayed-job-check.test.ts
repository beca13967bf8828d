/**
 * Which relayed jobs nobody waits for, from what the database says of them (the query itself runs
 * end to end in test/hostile/lost-cancels.test.ts).
 */
import { describe, expect, it } from 'vitest'
import { isAbandoned, JOB_ROW_GRACE_MS, type StoredJob } from './relayed-job-check.ts'

const now = 1_000_000
const job = (ageMs: number) => ({ jobId: 'j1', nodeId: 'n1', requestId: 'r1', since: now - ageMs })

describe('relayed job check', () => {
  const cases: Array<[string, StoredJob, number, boolean]> = [
    [
      'running: request processing, job acked',
      { requestStatus: 'processing', jobStatus: 'acked' },
      60_000,
      false,
    ],
    [
      'just offered: request pending, job pending',
      { requestStatus: 'pending', jobStatus: 'pending' },
      0,
      false,
    ],
    ['request cancelled', { requestStatus: 'cancelled', jobStatus: 'cancelled' }, 0, true],
    [
      'request completed (its row says so before the job row)',
      { requestStatus: 'completed', jobStatus: 'acked' },
      0,
      true,
    ],
    ['request failed (taken over)', { requestStatus: 'failed', jobStatus: 'failed' }, 0, true],
    [
      'job given to another node, request queued again',
      { requestStatus: 'pending', jobStatus: 'failed' },
      0,
      true,
    ],
    ['request deleted with its conversation', { requestStatus: null, jobStatus: null }, 0, true],
    [
      'job row not written yet',
      { requestStatus: 'pending', jobStatus: null },
      JOB_ROW_GRACE_MS - 1,
      false,
    ],
    [
      'job row never written (offer taken back)',
      { requestStatus: 'pending', jobStatus: null },
      JOB_ROW_GRACE_MS,
      true,
    ],
  ]
  it.each(cases)('%s', (_name, stored, ageMs, abandoned) => {
    expect(isAbandoned(job(ageMs), stored, now)).toBe(abandoned)
  })
})
