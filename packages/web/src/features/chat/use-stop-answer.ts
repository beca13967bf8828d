/**
 * @module Stop generating (issue 10): asks the coordinator to stop the answer being written. The
 * request ends `cancelled` with the text produced so far and what it cost; the record comes back
 * over realtime, and is read once more here in case that event is missed.
 */
import { useQueryClient } from '@tanstack/react-query'
import { useCallback, useState } from 'react'
import { useFeedback } from '../../components/feedback/feedback-context.tsx'
import { cancelRequest } from '../../lib/api.ts'
import { errorMessage } from '../../lib/api-error.ts'
import { pb } from '../../lib/pb.ts'
import type { RequestRecord } from './chat-types.ts'
import { writeHistory } from './history-api.ts'

export function useStopAnswer() {
  const [stoppingId, setStoppingId] = useState<string | null>(null)
  const { toast } = useFeedback()
  const queryClient = useQueryClient()
  const stop = useCallback(
    async (record: RequestRecord) => {
      setStoppingId(record.id)
      try {
        await cancelRequest(record.id)
        const fresh = await pb.collection('requests').getOne<RequestRecord>(record.id)
        writeHistory(queryClient, record.conversation, fresh, 'update')
      } catch (err) {
        const message = errorMessage(err, '')
        toast(message ? `Stop failed: ${message}` : 'Stop failed. Please try again.', 'error')
      } finally {
        setStoppingId(null)
      }
    },
    [queryClient, toast],
  )
  return { stop, stoppingId }
}
