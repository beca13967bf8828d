/**
 * @module Syntax highlighting, loaded only when the first code block needs it and run when the
 * browser is idle: lowlight (highlight.js's common languages) gives a syntax tree, which becomes
 * React elements (no HTML strings).
 */
import { toJsxRuntime } from 'hast-util-to-jsx-runtime'
import { common, createLowlight } from 'lowlight'
import type { ReactNode } from 'react'
import { Fragment, jsx, jsxs } from 'react/jsx-runtime'
import 'highlight.js/styles/github-dark.css'

const lowlight = createLowlight(common)

/** Auto-detection tries every language: not worth it on long blocks. */
const AUTO_DETECT_MAX_CHARS = 4000

export function highlight(code: string, language: string): ReactNode | null {
  let tree
  if (language && lowlight.registered(language)) tree = lowlight.highlight(language, code)
  else if (code.length <= AUTO_DETECT_MAX_CHARS) tree = lowlight.highlightAuto(code)
  else return null
  return toJsxRuntime(tree, { Fragment, jsx, jsxs })
}
