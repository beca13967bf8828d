import { QueryClientProvider } from '@tanstack/react-query'
import { setNonce } from 'get-nonce'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { createBrowserRouter, RouterProvider } from 'react-router'
import { FeedbackProvider } from './components/feedback/feedback-context.tsx'
import { AuthProvider, startSessionRefresh } from './context/auth-context.tsx'
import { ThemeProvider } from './context/theme-context.tsx'
import { createQueryClient } from './lib/query-client.ts'
import { createAppRoutes } from './routes/app-routes.tsx'
import './styles/index.css'

// The coordinator's Content-Security-Policy admits inline <style> elements only with the nonce it
// put in this page (dialogs' scroll lock injects one); hand it to the library that injects them.
const nonce = document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content
if (nonce) setNonce(nonce)

// The stored session's refresh starts now, alongside the first screen's code and data.
startSessionRefresh()
const queryClient = createQueryClient()
const router = createBrowserRouter(createAppRoutes(queryClient))

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <ThemeProvider>
        <FeedbackProvider>
          <AuthProvider>
            <RouterProvider router={router} />
          </AuthProvider>
        </FeedbackProvider>
      </ThemeProvider>
    </QueryClientProvider>
  </StrictMode>,
)
