/** Exact strings of the two login modes (spec §2). */
export type LoginMode = 'signin' | 'register'

export const LOGIN_COPY: Record<
  LoginMode,
  { heading: string; subtitle: string; submit: string; busy: string; toggle: string }
> = {
  signin: {
    heading: 'Sign in to your account',
    subtitle: 'Access your distributed AI dashboard',
    submit: 'Sign in',
    busy: 'Signing in...',
    toggle: "Don't have an account? Create one",
  },
  register: {
    heading: 'Create your account',
    subtitle: 'Join the distributed AI network',
    submit: 'Create account',
    busy: 'Creating account...',
    toggle: 'Already have an account? Sign in',
  },
}
