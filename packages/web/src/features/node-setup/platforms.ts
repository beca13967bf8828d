/**
 * @module The platform cards of the add-node page. Their status is true for our agent, the
 * `meshwork-node` CLI (packages/node): Node.js 20+, prebuilt llama.cpp binaries for macOS, Linux
 * and Windows (CPU, Metal, CUDA, Vulkan). See docs/web.md for why the cards read as they do.
 */

export type PlatformStatus = 'Available' | 'Coming Soon' | 'Planned'
export type PlatformId = 'macos' | 'linux' | 'windows' | 'desktop-app'

export interface Platform {
  id: PlatformId
  name: string
  status: PlatformStatus
  recommended?: boolean
  summary: string
  requirements: string[]
  /** How to get Node.js 20+ on this platform (Available cards only). */
  nodeHint?: string
}

export const PLATFORMS: Platform[] = [
  {
    id: 'macos',
    name: 'macOS',
    status: 'Available',
    recommended: true,
    summary: 'Command-line agent with Metal acceleration on Apple Silicon.',
    requirements: [
      'macOS on Apple Silicon or Intel',
      'Node.js 20 or later',
      'RAM and disk for the models you serve',
    ],
    nodeHint: 'Install Node.js 20+ from nodejs.org or with Homebrew: brew install node',
  },
  {
    id: 'linux',
    name: 'Linux',
    status: 'Available',
    summary: 'Command-line agent on CPU, or CUDA / Vulkan when a GPU and drivers are present.',
    requirements: [
      'x64 or arm64',
      'Node.js 20 or later',
      'Optional: NVIDIA GPU with CUDA, or Vulkan drivers',
    ],
    nodeHint:
      'Install Node.js 20+ from nodejs.org or your distribution (e.g. NodeSource packages).',
  },
  {
    id: 'windows',
    name: 'Windows',
    status: 'Available',
    summary: 'Command-line agent on CPU, or CUDA / Vulkan when a GPU and drivers are present.',
    requirements: [
      'Windows 10/11, 64-bit',
      'Node.js 20 or later',
      'Optional: NVIDIA GPU with CUDA, or Vulkan drivers',
    ],
    nodeHint: 'Install Node.js 20+ from nodejs.org or with winget install OpenJS.NodeJS.LTS',
  },
  {
    id: 'desktop-app',
    name: 'Desktop app',
    status: 'Planned',
    summary: 'A packaged app with a sign-in wizard, so no terminal is needed. Not built yet.',
    requirements: ['Until then, use the command-line agent above'],
  },
]

/** The platform selected on first visit. */
export const DEFAULT_PLATFORM: PlatformId = 'macos'

/** Only Available cards can be selected. */
export function isSelectable(platform: Platform): boolean {
  return platform.status === 'Available'
}

/** The label of a card that cannot be selected yet. */
export function unavailableLabel(status: PlatformStatus): string | null {
  if (status === 'Coming Soon') return 'Available Soon'
  if (status === 'Planned') return 'In Development'
  return null
}

/** The agent package every coordinator serves (compiled JavaScript, node-llama-cpp a dependency). */
export const AGENT_PACKAGE_PATH = '/downloads/meshwork-node.tgz'

/** The install, link and run commands, pointed at this coordinator. */
export function setupCommands(origin: string): { install: string; login: string; start: string } {
  return {
    install: `npm install -g ${origin}${AGENT_PACKAGE_PATH}`,
    login: `meshwork-node login --server ${origin}`,
    start: 'meshwork-node start',
  }
}
