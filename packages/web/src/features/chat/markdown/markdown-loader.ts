/**
 * @module Loads the markdown renderer once, without React.lazy: a Suspense boundary would hold
 * the finished reply back (React throttles revealing it), while plain text can show at once and
 * give way to rendered markdown the moment the module is here.
 */
import { useEffect, useSyncExternalStore } from 'react'

type MarkdownModule = typeof import('./render-markdown.tsx')

let loaded: MarkdownModule | null = null
let loading: Promise<MarkdownModule> | null = null
const listeners = new Set<() => void>()

/** Starts loading the renderer (idempotent); the chat screen calls it as soon as it knows. */
export function preloadMarkdown(): Promise<MarkdownModule> {
  loading ??= import('./render-markdown.tsx').then((module) => {
    loaded = module
    listeners.forEach((l) => l())
    return module
  })
  return loading
}

function subscribe(listener: () => void) {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

/** The renderer once loaded (null until then); asking for it starts the load. */
export function useMarkdownRenderer(): MarkdownModule | null {
  const module = useSyncExternalStore(subscribe, () => loaded)
  useEffect(() => {
    if (!loaded)
      preloadMarkdown().catch((err: unknown) =>
        console.error('Markdown renderer failed to load', err),
      )
  }, [])
  return module
}
