import * as DropdownMenu from '@radix-ui/react-dropdown-menu'
import * as Switch from '@radix-ui/react-switch'
import { LogOut, Moon, User } from 'lucide-react'
import { useNavigate } from 'react-router'
import { useAuth } from '../../context/auth-context.tsx'
import { useTheme } from '../../context/theme-context.tsx'

const itemClass =
  'flex cursor-pointer select-none items-center gap-2 rounded-md px-2 py-2 text-sm text-slate-700 outline-none data-[highlighted]:bg-slate-100 dark:text-slate-200 dark:data-[highlighted]:bg-slate-800'

/** Avatar menu: Profile, light/dark switch, Sign out. */
export function UserMenu() {
  const { user, logout } = useAuth()
  const { theme, toggleTheme } = useTheme()
  const navigate = useNavigate()
  const email = user?.email ?? ''
  const initial = (email.charAt(0) || '?').toUpperCase()

  return (
    <DropdownMenu.Root modal={false}>
      <DropdownMenu.Trigger
        aria-label="Account menu"
        className="focus-ring flex h-9 w-9 items-center justify-center rounded-full bg-brand-600 text-sm font-semibold text-white shadow-sm hover:bg-brand-700"
      >
        {initial}
      </DropdownMenu.Trigger>
      <DropdownMenu.Portal>
        <DropdownMenu.Content
          align="end"
          sideOffset={8}
          className="z-50 w-60 animate-fade-in rounded-xl border border-slate-200 bg-white p-1.5 shadow-lg dark:border-slate-800 dark:bg-slate-900"
        >
          <div className="px-2 py-2">
            <p className="truncate text-sm font-medium text-slate-900 dark:text-white">
              {user?.name}
            </p>
            <p className="truncate text-xs text-slate-500 dark:text-slate-400">{email}</p>
          </div>
          <DropdownMenu.Separator className="my-1 h-px bg-slate-200 dark:bg-slate-800" />
          <DropdownMenu.Item className={itemClass} onSelect={() => navigate('/profile')}>
            <User className="h-4 w-4" aria-hidden /> Profile
          </DropdownMenu.Item>
          <DropdownMenu.Item
            className={itemClass}
            onSelect={(e) => {
              // Keep the menu open so the switch visibly flips.
              e.preventDefault()
              toggleTheme()
            }}
          >
            <Moon className="h-4 w-4" aria-hidden />
            <span className="flex-1">Dark mode</span>
            <Switch.Root
              checked={theme === 'dark'}
              aria-label="Dark mode"
              tabIndex={-1}
              className="relative h-5 w-9 rounded-full bg-slate-300 transition-colors data-[state=checked]:bg-brand-600 dark:bg-slate-700"
            >
              <Switch.Thumb className="block h-4 w-4 translate-x-0.5 rounded-full bg-white shadow transition-transform data-[state=checked]:translate-x-[18px]" />
            </Switch.Root>
          </DropdownMenu.Item>
          <DropdownMenu.Separator className="my-1 h-px bg-slate-200 dark:bg-slate-800" />
          <DropdownMenu.Item
            className={itemClass}
            onSelect={() => {
              logout()
              void navigate('/login')
            }}
          >
            <LogOut className="h-4 w-4" aria-hidden /> Sign out
          </DropdownMenu.Item>
        </DropdownMenu.Content>
      </DropdownMenu.Portal>
    </DropdownMenu.Root>
  )
}
