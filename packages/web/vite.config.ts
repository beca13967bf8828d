import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'
import tailwindcss from '@tailwindcss/vite'
import { firstVisit } from './build-plugins/first-visit.ts'

// React Router exports only its development build (warnings, extra checks; remix-run/react-router
// issues 14102 and 14753): production builds take the production build beside it.
const reactRouterDist = join(dirname(createRequire(import.meta.url).resolve('react-router')), '..')

// The coordinator serves dist/ at / in production; in development Vite proxies the API to it.
export default defineConfig(({ command }) => ({
  resolve: {
    alias:
      command === 'build'
        ? [{ find: /^react-router$/, replacement: join(reactRouterDist, 'production/index.mjs') }]
        : [],
  },
  plugins: [
    react(),
    tailwindcss(),
    firstVisit({
      homeModule: 'src/features/chat/chat-page.tsx',
      markdownModule: 'src/features/chat/markdown/render-markdown.tsx',
      bootEntry: 'boot',
    }),
  ],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 600,
    rolldownOptions: {
      input: { index: 'index.html', boot: 'src/boot.ts' },
      output: {
        codeSplitting: {
          groups: [
            // boot.ts and the two small modules it shares with the app, in one file without
            // imports: it must start its requests the moment it arrives.
            {
              name: 'boot',
              test: /[\\/]src[\\/](boot\.ts|lib[\\/]boot-results\.ts|features[\\/]chat[\\/]chat-requests\.ts)$/,
              priority: 10,
            },
            // The app's own small shared modules and icons in one chunk instead of a dozen
            // tiny ones (each a request on a cold load); the heavy libraries keep their own.
            {
              name: 'shared',
              test: /[\\/](src[\\/](lib|hooks|components)|node_modules[\\/]lucide-react)[\\/]/,
              minShareCount: 2,
            },
          ],
        },
      },
    },
  },
  server: {
    port: 5173,
    proxy: {
      '/api': { target: 'http://127.0.0.1:8090', changeOrigin: true },
    },
  },
  preview: {
    proxy: {
      '/api': { target: 'http://127.0.0.1:8090', changeOrigin: true },
    },
  },
}))
