/** Top-level navigation of the app shell (spec §2). */
export const NAV_LINKS = [
  { to: '/chat', label: 'Chat' },
  { to: '/nodes', label: 'Nodes' },
  { to: '/network', label: 'Network' },
] as const
