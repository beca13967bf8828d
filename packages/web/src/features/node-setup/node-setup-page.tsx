import { ArrowLeft, LifeBuoy } from 'lucide-react'
import { useState, type ReactNode } from 'react'
import { Link } from 'react-router'
import { Card } from '../../components/card.tsx'
import { PageContainer } from '../../components/page-header.tsx'
import { CommandBlock } from './components/command-block.tsx'
import { PlatformCard } from './components/platform-card.tsx'
import { DEFAULT_PLATFORM, PLATFORMS, setupCommands, type PlatformId } from './platforms.ts'

function Step({ n, title, children }: { n: number; title: string; children: ReactNode }) {
  return (
    <li className="flex gap-4">
      <span className="flex h-7 w-7 shrink-0 items-center justify-center rounded-full bg-brand-600 text-sm font-semibold text-white">
        {n}
      </span>
      <div className="min-w-0 flex-1 pb-1">
        <h3 className="mb-2 font-medium text-slate-900 dark:text-white">{title}</h3>
        <div className="space-y-2 text-sm text-slate-600 dark:text-slate-300">{children}</div>
      </div>
    </li>
  )
}

/** Add-node instructions (spec §2) for the meshwork-node agent, pointed at this coordinator. */
export default function NodeSetupPage() {
  const [selected, setSelected] = useState<PlatformId>(DEFAULT_PLATFORM)
  const platform = PLATFORMS.find((p) => p.id === selected) ?? PLATFORMS[0]
  const origin = window.location.origin
  const commands = setupCommands(origin)

  return (
    <PageContainer>
      <Link
        to="/nodes"
        className="focus-ring mb-4 inline-flex items-center gap-1.5 rounded text-sm font-medium text-brand-700 hover:text-brand-600 dark:text-brand-400"
      >
        <ArrowLeft className="h-4 w-4" aria-hidden />
        Back to Nodes
      </Link>
      <h1 className="text-2xl font-semibold tracking-tight text-slate-900 dark:text-white">
        Add a Node to Meshwork
      </h1>
      <p className="mt-1 mb-6 text-sm text-slate-600 dark:text-slate-400">
        Run the <code className="font-mono">meshwork-node</code> agent on a computer you own, link
        it to your account, and choose its models on My Nodes. It earns credits for every request it
        completes.
      </p>

      <div className="mb-6 grid gap-3 sm:grid-cols-2 lg:grid-cols-4">
        {PLATFORMS.map((p) => (
          <PlatformCard
            key={p.id}
            platform={p}
            selected={p.id === selected}
            onSelect={() => setSelected(p.id)}
          />
        ))}
      </div>

      <Card className="p-5 sm:p-6">
        <h2 className="mb-5 text-base font-semibold text-slate-900 dark:text-white">
          Set up on {platform.name}
        </h2>
        <ol className="space-y-6">
          <Step n={1} title="Install Node.js 20 or later">
            <p>{platform.nodeHint}</p>
          </Step>
          <Step n={2} title="Install the node agent">
            <CommandBlock command={commands.install} label="install command" />
            <p>
              This coordinator serves the agent itself, so the command installs the version that
              matches it. It comes with prebuilt llama.cpp binaries for your CPU and GPU (Metal,
              CUDA or Vulkan); nothing is compiled. Without permission to install globally, add{' '}
              <code className="font-mono">--prefix ~/.local</code> and put{' '}
              <code className="font-mono">~/.local/bin</code> on your PATH.
            </p>
          </Step>
          <Step n={3} title="Link it to your account">
            <CommandBlock command={commands.login} label="login command" />
            <p>
              It prints an approval link and opens it in your browser (add{' '}
              <code className="font-mono">--device "My laptop"</code> to name it). Choose{' '}
              <span className="font-medium">Approve Connection</span> and the node appears on My
              Nodes.
            </p>
          </Step>
          <Step n={4} title="Start serving">
            <CommandBlock command={commands.start} label="start command" />
            <p>
              Keep it running. Once it says it is connected, go to{' '}
              <Link
                to="/nodes"
                className="font-medium text-brand-700 underline dark:text-brand-400"
              >
                My Nodes
              </Link>
              , edit the node to download a model, start serving it, and switch the node to Active.
              If it cannot connect, it says why (for example connection refused) and keeps trying.
            </p>
          </Step>
        </ol>
      </Card>

      <div className="mt-6 flex gap-3 rounded-xl border border-brand-100 bg-brand-50/60 p-4 text-sm text-slate-700 dark:border-brand-500/20 dark:bg-brand-500/10 dark:text-slate-200">
        <LifeBuoy
          className="mt-0.5 h-5 w-5 shrink-0 text-brand-600 dark:text-brand-400"
          aria-hidden
        />
        <div>
          <p className="font-medium text-slate-900 dark:text-white">Need help?</p>
          <p className="mt-0.5">
            Ask in your network's community chat, or read the documentation:{' '}
            <code className="font-mono">packages/node/README.md</code> for every command and flag,
            and <code className="font-mono">docs/node-protocol.md</code> for how nodes talk to the
            coordinator.
          </p>
        </div>
      </div>
    </PageContainer>
  )
}
