/**
 * @module Assistant markdown, sanitised then highlighted. Loaded lazily: react-markdown and
 * highlight.js are the heaviest code of the chat screen and stay out of the first bundle.
 */
import ReactMarkdown from 'react-markdown'
import type { Components } from 'react-markdown'
import rehypeHighlight from 'rehype-highlight'
import rehypeSanitize from 'rehype-sanitize'
import remarkGfm from 'remark-gfm'
import 'highlight.js/styles/github-dark.css'

const components: Components = {
  a: ({ node: _node, ...props }) => <a {...props} target="_blank" rel="noopener noreferrer nofollow" />,
}

// Sanitise before highlighting: the sanitiser drops scripts, on* handlers and javascript: URLs,
// and highlighting afterwards only adds its own span classes.
const rehypePlugins = [rehypeSanitize, [rehypeHighlight, { detect: true, ignoreMissing: true }]] as const

export default function MarkdownContent({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown
        remarkPlugins={[remarkGfm]}
        rehypePlugins={rehypePlugins as never}
        components={components}
      >
        {text}
      </ReactMarkdown>
    </div>
  )
}
