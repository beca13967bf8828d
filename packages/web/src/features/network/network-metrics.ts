/**
 * @module Network metrics (spec §2, §9): the last 24 hourly buckets of requests and jobs,
 * success rate and average response time. Pure, so the numbers on the charts are tested.
 */
import { parseRecordDate } from '../../lib/format.ts'

const HOUR_MS = 60 * 60 * 1000
export const METRIC_HOURS = 24

export interface RequestSample {
  status: string
  created: string
  processing_time_ms?: number | null
}

export interface JobSample {
  status: string
  created: string
}

export interface HourBucket {
  /** Start of the hour, epoch ms. */
  start: number
  /** Local 'HH:00' label. */
  label: string
}

/** The last `hours` whole hours, oldest first; the last bucket is the current hour. */
export function hourlyBuckets(now: Date, hours = METRIC_HOURS): HourBucket[] {
  const current = new Date(now)
  current.setMinutes(0, 0, 0)
  const buckets: HourBucket[] = []
  for (let i = hours - 1; i >= 0; i--) {
    const start = current.getTime() - i * HOUR_MS
    buckets.push({ start, label: `${String(new Date(start).getHours()).padStart(2, '0')}:00` })
  }
  return buckets
}

/**
 * The hour labels the chart axis shows: every `step` hours on the clock (00:00, 03:00, ...), so
 * the labels are evenly spaced and never skip an uneven number of hours. Each bar still has its
 * own hour; the axis just does not print all 24 labels.
 */
export function axisTicks(labels: string[], step: number): string[] {
  return labels.filter((label) => Number.parseInt(label, 10) % step === 0)
}

/** Index of the bucket a record's `created` falls in, or -1 outside the window. */
function bucketIndex(buckets: HourBucket[], created: string): number {
  const t = parseRecordDate(created).getTime()
  if (Number.isNaN(t) || buckets.length === 0) return -1
  const index = Math.floor((t - buckets[0].start) / HOUR_MS)
  return index >= 0 && index < buckets.length ? index : -1
}

/** Completed requests as a percent of all requests; 0 when there are none. */
export function successRate(requests: RequestSample[]): number {
  if (requests.length === 0) return 0
  return (requests.filter((r) => r.status === 'completed').length / requests.length) * 100
}

/** Mean processing_time_ms of completed requests; 0 when none completed. */
export function averageResponseMs(requests: RequestSample[]): number {
  const times = requests
    .filter((r) => r.status === 'completed' && typeof r.processing_time_ms === 'number')
    .map((r) => r.processing_time_ms as number)
  return times.length === 0 ? 0 : times.reduce((a, b) => a + b, 0) / times.length
}

export interface RequestPoint {
  label: string
  completed: number
  processing: number
  pending: number
  total: number
  /** null when the hour has no requests, so the chart shows a gap rather than a false 0 %. */
  successRate: number | null
  /** null when the hour has no completed request. */
  avgResponseMs: number | null
}

/** Requests per hour for the 'Requests Over Time' and 'Performance Metrics' tabs. */
export function requestSeries(requests: RequestSample[], now: Date): RequestPoint[] {
  const buckets = hourlyBuckets(now)
  const groups: RequestSample[][] = buckets.map(() => [])
  for (const r of requests) {
    const i = bucketIndex(buckets, r.created)
    if (i >= 0) groups[i].push(r)
  }
  return buckets.map((bucket, i) => {
    const group = groups[i]
    const completed = group.filter((r) => r.status === 'completed').length
    return {
      label: bucket.label,
      completed,
      processing: group.filter((r) => r.status === 'processing').length,
      pending: group.filter((r) => r.status === 'pending').length,
      total: group.length,
      successRate: group.length === 0 ? null : Math.round(successRate(group) * 10) / 10,
      avgResponseMs: completed === 0 ? null : Math.round(averageResponseMs(group)),
    }
  })
}

export interface JobPoint {
  label: string
  pending: number
  acked: number
}

/**
 * A job a node has acknowledged. The coordinator moves jobs pending -> acked -> completed (or
 * failed), so a completed job was acknowledged too; counting only 'acked' would leave the chart
 * nearly empty once work finishes.
 */
export function isAcknowledgedJob(status: string): boolean {
  return status === 'acked' || status === 'completed'
}

/** Jobs per hour for the 'Job Queue' tab. */
export function jobSeries(jobs: JobSample[], now: Date): JobPoint[] {
  const buckets = hourlyBuckets(now)
  const points = buckets.map((b) => ({ label: b.label, pending: 0, acked: 0 }))
  for (const job of jobs) {
    const i = bucketIndex(buckets, job.created)
    if (i < 0) continue
    if (job.status === 'pending') points[i].pending++
    else if (isAcknowledgedJob(job.status)) points[i].acked++
  }
  return points
}

/** Requests in the 24-hour window, for the summary card's success rate and response time. */
export function requestsInWindow<T extends RequestSample>(requests: T[], now: Date): T[] {
  const buckets = hourlyBuckets(now)
  return requests.filter((r) => bucketIndex(buckets, r.created) >= 0)
}

/** Success rate with 1 decimal, locale formatted, e.g. '97.5%'. */
export function formatPercent(value: number): string {
  return `${value.toLocaleString(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 })}%`
}

/** Response time with 0 decimals, locale formatted, e.g. '1,234 ms'. */
export function formatMs(value: number): string {
  return `${Math.round(value).toLocaleString(undefined, { maximumFractionDigits: 0 })} ms`
}
