import { ExternalLink as ExternalIcon, ImageIcon } from 'lucide-react'
import type { AnchorHTMLAttributes, ImgHTMLAttributes } from 'react'

/** Links from answers open in a new tab and tell the target nothing about where they came from. */
export function ExternalLink({
  node: _node,
  ...props
}: AnchorHTMLAttributes<HTMLAnchorElement> & { node?: unknown }) {
  return (
    <a {...props} target="_blank" rel="noopener noreferrer nofollow" referrerPolicy="no-referrer" />
  )
}

function hostOf(src: string): string {
  try {
    return new URL(src, window.location.href).host
  } catch {
    return ''
  }
}

/**
 * An image in an answer is shown as a link, never fetched: loading it would tell its host (which
 * the node that wrote the answer may control) who reads the answer, and when.
 */
export function ImageLink({ src, alt }: ImgHTMLAttributes<HTMLImageElement> & { node?: unknown }) {
  const href = typeof src === 'string' ? src : ''
  const host = href ? hostOf(href) : ''
  const label = alt?.trim() || 'Image'
  if (!href) return <span className="image-link">{label}</span>
  return (
    <a
      href={href}
      target="_blank"
      rel="noopener noreferrer nofollow"
      referrerPolicy="no-referrer"
      className="image-link"
    >
      <ImageIcon className="h-4 w-4 shrink-0" aria-hidden />
      <span>{label}</span>
      {host && <span className="image-link-host">({host})</span>}
      <ExternalIcon className="h-3 w-3 shrink-0" aria-hidden />
    </a>
  )
}
