/** The Meshwork mark: five nodes joined in a mesh. */
export function Logo({ className = 'h-8 w-8' }: { className?: string }) {
  return (
    <svg viewBox="0 0 32 32" className={className} aria-hidden>
      <rect width="32" height="32" rx="8" className="fill-brand-600" />
      <g stroke="#fff" strokeWidth="2" fill="none" strokeLinecap="round">
        <path d="M9 10l7 6 7-6M9 22l7-6 7 6" />
      </g>
      <g fill="#fff">
        <circle cx="9" cy="10" r="2.5" />
        <circle cx="23" cy="10" r="2.5" />
        <circle cx="9" cy="22" r="2.5" />
        <circle cx="23" cy="22" r="2.5" />
        <circle cx="16" cy="16" r="2.5" />
      </g>
    </svg>
  )
}
