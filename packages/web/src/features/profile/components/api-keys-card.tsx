import { Check, Copy, KeyRound } from 'lucide-react'
import { useState, type FormEvent } from 'react'
import { Button } from '../../../components/button.tsx'
import { Card } from '../../../components/card.tsx'
import { Spinner } from '../../../components/spinner.tsx'
import { errorMessage } from '../../../lib/api-error.ts'
import { formatNumber, parseRecordDate } from '../../../lib/format.ts'
import {
  useApiKeys,
  useCreateApiKey,
  useRevokeApiKey,
  type ApiKey,
  type CreatedApiKey,
} from '../api-keys-api.ts'
import { RevokeKeyDialog } from './revoke-key-dialog.tsx'

const inputClass =
  'focus-ring h-10 w-full rounded-lg border border-slate-300 bg-white px-3 text-sm text-slate-900 placeholder:text-slate-400 dark:border-slate-700 dark:bg-slate-950 dark:text-white'

/** 'API keys' on the Profile page (issue 10): create (secret shown once), list, revoke. */
export function ApiKeysCard() {
  const keys = useApiKeys()
  const create = useCreateApiKey()
  const revoke = useRevokeApiKey()
  const [name, setName] = useState('')
  const [limit, setLimit] = useState('')
  const [created, setCreated] = useState<CreatedApiKey | null>(null)
  const [revoking, setRevoking] = useState<ApiKey | null>(null)

  const submit = (e: FormEvent) => {
    e.preventDefault()
    const spend = limit.trim() ? Number(limit) : 0
    create.mutate(
      { name: name.trim(), spend_limit: spend },
      {
        onSuccess: (key) => {
          setCreated(key)
          setName('')
          setLimit('')
        },
      },
    )
  }

  return (
    <Card role="region" aria-labelledby="api-keys-title" className="overflow-hidden">
      <div className="border-b border-slate-200 px-5 py-4 sm:px-6 dark:border-slate-800">
        <h2 id="api-keys-title" className="text-base font-semibold text-slate-900 dark:text-white">
          API keys
        </h2>
        <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
          Call the network from your own programs through its OpenAI-compatible API at{' '}
          <code className="font-mono text-slate-700 dark:text-slate-300">/v1</code>. Requests are
          billed like chat messages.
        </p>
      </div>

      <form
        onSubmit={submit}
        className="flex flex-col gap-3 px-5 py-4 sm:flex-row sm:items-end sm:px-6"
      >
        <label className="flex-1 text-sm font-medium text-slate-700 dark:text-slate-300">
          Key name
          <input
            className={`${inputClass} mt-1`}
            value={name}
            maxLength={100}
            placeholder="e.g. My script"
            onChange={(e) => setName(e.target.value)}
          />
        </label>
        <label className="text-sm font-medium text-slate-700 sm:w-48 dark:text-slate-300">
          Spending limit (optional)
          <input
            className={`${inputClass} mt-1`}
            value={limit}
            inputMode="decimal"
            type="number"
            min={0}
            placeholder="No limit"
            onChange={(e) => setLimit(e.target.value)}
          />
        </label>
        <Button type="submit" disabled={!name.trim() || create.isPending}>
          <KeyRound className="h-4 w-4" aria-hidden />
          {create.isPending ? 'Creating...' : 'Create key'}
        </Button>
      </form>
      {create.isError && (
        <p
          role="alert"
          className="mx-5 mb-4 rounded-lg bg-red-50 px-3 py-2 text-sm text-red-700 sm:mx-6 dark:bg-red-500/10 dark:text-red-400"
        >
          {errorMessage(create.error, 'Failed to create the key')}
        </p>
      )}
      {created && <NewKeyNotice created={created} onDone={() => setCreated(null)} />}

      {keys.isLoading ? (
        <Spinner />
      ) : !keys.data?.length ? (
        <p className="border-t border-slate-200 px-6 py-8 text-center text-sm text-slate-500 dark:border-slate-800 dark:text-slate-400">
          No API keys yet
        </p>
      ) : (
        <div className="overflow-x-auto border-t border-slate-200 dark:border-slate-800">
          <table aria-label="Your API keys" className="w-full min-w-[40rem] text-left text-sm">
            <thead className="bg-slate-50 text-xs font-medium tracking-wide text-slate-500 uppercase dark:bg-slate-950/40 dark:text-slate-400">
              <tr>
                <th scope="col" className="px-5 py-3 sm:px-6">
                  Name
                </th>
                <th scope="col" className="px-3 py-3">
                  Key
                </th>
                <th scope="col" className="px-3 py-3">
                  Created
                </th>
                <th scope="col" className="px-3 py-3">
                  Last used
                </th>
                <th scope="col" className="px-3 py-3 text-right">
                  Spent
                </th>
                <th scope="col" className="px-5 py-3 sm:px-6">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100 dark:divide-slate-800">
              {keys.data.map((key) => (
                <tr key={key.id}>
                  <td className="px-5 py-3 font-medium text-slate-900 sm:px-6 dark:text-white">
                    {key.name}
                  </td>
                  <td className="px-3 py-3 font-mono text-slate-600 dark:text-slate-300">
                    {key.hint}
                  </td>
                  <td className="px-3 py-3 whitespace-nowrap text-slate-600 dark:text-slate-300">
                    {parseRecordDate(key.created).toLocaleDateString()}
                  </td>
                  <td className="px-3 py-3 whitespace-nowrap text-slate-600 dark:text-slate-300">
                    {key.last_used ? parseRecordDate(key.last_used).toLocaleString() : 'Never'}
                  </td>
                  <td className="px-3 py-3 text-right whitespace-nowrap tabular-nums text-slate-600 dark:text-slate-300">
                    {formatNumber(key.spent, 2)}
                    {key.spend_limit > 0 && ` of ${formatNumber(key.spend_limit, 2)}`}
                  </td>
                  <td className="px-5 py-3 text-right sm:px-6">
                    <Button variant="outline" size="sm" onClick={() => setRevoking(key)}>
                      Revoke
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <RevokeKeyDialog
        apiKey={revoking}
        pending={revoke.isPending}
        error={revoke.isError ? errorMessage(revoke.error, 'Failed to revoke the key') : ''}
        onCancel={() => {
          setRevoking(null)
          revoke.reset()
        }}
        onConfirm={(key) => revoke.mutate(key.id, { onSuccess: () => setRevoking(null) })}
      />
    </Card>
  )
}

/** The secret, once: with a copy button, until dismissed. */
function NewKeyNotice({ created, onDone }: { created: CreatedApiKey; onDone: () => void }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    await navigator.clipboard.writeText(created.key)
    setCopied(true)
  }
  return (
    <div
      role="status"
      className="mx-5 mb-4 rounded-lg border border-amber-300 bg-amber-50 p-4 sm:mx-6 dark:border-amber-500/40 dark:bg-amber-500/10"
    >
      <p className="text-sm font-medium text-amber-900 dark:text-amber-200">
        Copy your new key “{created.name}” now. You won’t be able to see it again.
      </p>
      <div className="mt-3 flex flex-col gap-2 sm:flex-row sm:items-center">
        <code
          aria-label="New API key"
          className="flex-1 rounded-md border border-amber-200 bg-white px-3 py-2 font-mono text-sm break-all text-slate-900 dark:border-amber-500/30 dark:bg-slate-950 dark:text-white"
        >
          {created.key}
        </code>
        <div className="flex gap-2">
          <Button variant="outline" size="sm" onClick={() => void copy()}>
            {copied ? (
              <Check className="h-4 w-4" aria-hidden />
            ) : (
              <Copy className="h-4 w-4" aria-hidden />
            )}
            {copied ? 'Copied' : 'Copy'}
          </Button>
          <Button size="sm" onClick={onDone}>
            Done
          </Button>
        </div>
      </div>
    </div>
  )
}
