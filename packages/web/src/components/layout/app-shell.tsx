import { Link, NavLink, Outlet } from 'react-router'
import { useAuth } from '../../context/auth-context.tsx'
import { cn } from '../../lib/cn.ts'
import { Logo } from '../logo.tsx'
import { MobileMenu } from './mobile-menu.tsx'
import { NAV_LINKS } from './nav-links.ts'
import { UserMenu } from './user-menu.tsx'

/** Top bar (logo, name, links, avatar menu or Sign In) above the routed screen. */
export function AppShell() {
  const { status } = useAuth()
  return (
    <div className="flex h-full flex-col">
      <header className="sticky top-0 z-30 shrink-0 border-b border-slate-200 bg-white/85 backdrop-blur dark:border-slate-800 dark:bg-slate-950/85">
        <div className="flex h-14 items-center gap-2 px-3 sm:px-5">
          <MobileMenu />
          <Link to="/chat" className="focus-ring flex items-center gap-2 rounded-lg pr-2">
            <Logo className="h-7 w-7" />
            <span className="text-lg font-semibold tracking-tight">Meshwork</span>
          </Link>
          <nav className="ml-4 hidden items-center gap-1 md:flex" aria-label="Main">
            {NAV_LINKS.map((link) => (
              <NavLink
                key={link.to}
                to={link.to}
                className={({ isActive }) =>
                  cn(
                    'focus-ring rounded-lg px-3 py-1.5 text-sm font-medium transition-colors',
                    isActive
                      ? 'bg-slate-100 text-slate-900 dark:bg-slate-800 dark:text-white'
                      : 'text-slate-600 hover:text-slate-900 dark:text-slate-400 dark:hover:text-white',
                  )
                }
              >
                {link.label}
              </NavLink>
            ))}
          </nav>
          <div className="ml-auto flex items-center gap-2">
            {status === 'signed-in' && <UserMenu />}
            {status === 'signed-out' && (
              <Link
                to="/login"
                className="focus-ring rounded-lg bg-brand-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-brand-700"
              >
                Sign In
              </Link>
            )}
          </div>
        </div>
      </header>
      <main className="min-h-0 flex-1 overflow-y-auto">
        <Outlet />
      </main>
    </div>
  )
}
