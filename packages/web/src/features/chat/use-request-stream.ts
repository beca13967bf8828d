import { useEffect, useRef } from 'react'
import { pb } from '../../lib/pb.ts'
import { isTerminal, type RequestRecord } from './chat-types.ts'

const POLL_FALLBACK_MS = 1_500

/**
 * Follows one request record live: subscribes to requests/{id} over realtime and hands each
 * record to `onRecord`. After subscribing it reads the record once, because the answer may have
 * finished before the subscription was in place. If realtime cannot connect it polls instead.
 */
export function useRequestStream(
  requestId: string | undefined,
  active: boolean,
  onRecord: (record: RequestRecord) => void,
): void {
  const onRecordRef = useRef(onRecord)
  onRecordRef.current = onRecord

  useEffect(() => {
    if (!requestId || !active) return
    let cancelled = false
    let unsubscribe: (() => Promise<void>) | null = null
    let pollTimer: ReturnType<typeof setTimeout> | undefined
    const deliver = (record: RequestRecord) => {
      if (!cancelled) onRecordRef.current(record)
    }
    const readOnce = () => pb.collection('requests').getOne<RequestRecord>(requestId)

    const poll = () => {
      readOnce()
        .then((record) => {
          deliver(record)
          if (!cancelled && !isTerminal(record.status)) pollTimer = setTimeout(poll, POLL_FALLBACK_MS)
        })
        .catch(() => {
          if (!cancelled) pollTimer = setTimeout(poll, POLL_FALLBACK_MS)
        })
    }

    pb.collection('requests')
      .subscribe<RequestRecord>(requestId, (event) => deliver(event.record))
      .then((unsub) => {
        if (cancelled) {
          void unsub()
          return
        }
        unsubscribe = unsub
        readOnce().then(deliver, (err: unknown) => console.warn('Could not read request', err))
      })
      .catch((err: unknown) => {
        console.error('Realtime unavailable, polling the request instead', err)
        poll()
      })

    return () => {
      cancelled = true
      clearTimeout(pollTimer)
      // Unsubscribing can fail if the realtime connection already dropped; nothing to clean then.
      unsubscribe?.().catch(() => {})
    }
  }, [requestId, active])
}
