/**
 * @module A Vite build plugin for the first visit: index.html gets the boot entry (src/boot.ts)
 * as its first script, and meta tags naming the files of the home screen (the chat, where `/`
 * leads) and of the markdown renderer, for boot.ts to preload when the page is the chat (and a
 * conversation is open). The browser fetches them alongside the main entry instead of after the
 * main entry has run and the router has asked for them; other pages load none of it.
 */
import type { Plugin } from 'vite'

export interface FirstVisitOptions {
  /** The module of the home screen, e.g. 'src/features/chat/chat-page.tsx'. */
  homeModule: string
  /** A module boot.ts may preload (named in `<meta name="meshwork-markdown">`). */
  markdownModule: string
  /** The build input name of the boot entry. */
  bootEntry: string
}

export function firstVisit({ homeModule, markdownModule, bootEntry }: FirstVisitOptions): Plugin {
  return {
    name: 'meshwork-first-visit',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        const bundle = ctx.bundle
        if (!bundle) return []
        const chunks = Object.values(bundle).filter((c) => c.type === 'chunk')
        const find = (what: string, test: (c: (typeof chunks)[number]) => boolean) => {
          const chunk = chunks.find(test)
          if (!chunk) throw new Error(`firstVisit: no chunk for ${what}`)
          return chunk
        }
        const main = find(
          'index.html',
          (c) => c.isEntry && !!c.facadeModuleId?.endsWith('index.html'),
        )
        const boot = find(bootEntry, (c) => c.isEntry && c.name === bootEntry)
        const home = find(homeModule, (c) => !!c.facadeModuleId?.endsWith(homeModule))
        if (boot.imports.length > 0)
          throw new Error(`firstVisit: ${bootEntry} must not import other chunks (${boot.imports})`)
        const already = new Set([main.fileName, ...main.imports])
        const preload = [home.fileName, ...home.imports].filter((f) => !already.has(f))
        const markdown = find(markdownModule, (c) => !!c.facadeModuleId?.endsWith(markdownModule))
        const markdownFiles = [markdown.fileName, ...markdown.imports].filter(
          (f) => !already.has(f) && !preload.includes(f),
        )
        const names = (files: string[]) => files.map((f) => `/${f}`).join(' ')
        return [
          {
            tag: 'meta',
            attrs: { name: 'meshwork-home', content: names(preload) },
            injectTo: 'head-prepend' as const,
          },
          {
            tag: 'meta',
            attrs: { name: 'meshwork-markdown', content: names(markdownFiles) },
            injectTo: 'head-prepend' as const,
          },
          {
            tag: 'script',
            attrs: { type: 'module', crossorigin: '', src: `/${boot.fileName}` },
            injectTo: 'head-prepend' as const,
          },
        ]
      },
    },
  }
}
