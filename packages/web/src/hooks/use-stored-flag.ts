import { useCallback, useState } from 'react'

function read(key: string, fallback: boolean): boolean {
  try {
    const raw = localStorage.getItem(key)
    return raw === null ? fallback : raw === 'true'
  } catch {
    return fallback
  }
}

/** A boolean preference persisted in localStorage as 'true' / 'false'. */
export function useStoredFlag(key: string, fallback: boolean): [boolean, (value: boolean) => void] {
  const [value, setValue] = useState(() => read(key, fallback))
  const set = useCallback(
    (next: boolean) => {
      setValue(next)
      try {
        localStorage.setItem(key, String(next))
      } catch {
        // Storage may be refused (private mode); the choice still holds for this visit.
      }
    },
    [key],
  )
  return [value, set]
}
