import { useQueryClient } from '@tanstack/react-query'
import { PanelLeft } from 'lucide-react'
import { useCallback, useEffect, useMemo, useState } from 'react'
import { Navigate, useSearchParams } from 'react-router'
import { Spinner } from '../../components/spinner.tsx'
import { useAuth } from '../../context/auth-context.tsx'
import { useBalance } from '../../hooks/use-balance.ts'
import { useStoredFlag } from '../../hooks/use-stored-flag.ts'
import { sendChat } from '../../lib/api.ts'
import { errorMessage } from '../../lib/api-error.ts'
import {
  chatKeys,
  useAvailableModels,
  useConversationHistory,
  useConversationMutations,
  useConversations,
  useDefaultTemperature,
} from './chat-api.ts'
import { ChatFooter } from './components/chat-footer.tsx'
import { ChatHeader } from './components/chat-header.tsx'
import { ChatWelcome } from './components/chat-welcome.tsx'
import { Composer } from './components/composer.tsx'
import { ConversationSidebar } from './components/conversation-sidebar.tsx'
import { MessageList } from './components/message-list.tsx'
import { ModelUnavailableBanner } from './components/model-unavailable-banner.tsx'
import { useAutoScroll } from './use-auto-scroll.ts'
import { useChatItems } from './use-chat-items.ts'

const SMALL_SCREEN_PX = 768

/** The Chat screen (spec §2): sidebar, header, messages, composer, footer. */
export default function ChatPage() {
  const { status } = useAuth()
  const queryClient = useQueryClient()
  const [searchParams, setSearchParams] = useSearchParams()
  const conversationId = searchParams.get('c')
  const [sidebarOpen, setSidebarOpen] = useState(() => window.innerWidth >= SMALL_SCREEN_PX)
  const [draft, setDraft] = useState('')
  const [sending, setSending] = useState(false)
  const [modelId, setModelId] = useState<string | null>(null)
  const defaultTemperature = useDefaultTemperature()
  const [temperature, setTemperature] = useState<number | null>(null)
  const [showCosts, setShowCosts] = useStoredFlag('showCosts', true)

  const conversations = useConversations()
  const models = useAvailableModels()
  const history = useConversationHistory(conversationId)
  const balance = useBalance()
  const { create, update, remove } = useConversationMutations()
  const { items, add, patch } = useChatItems(conversationId, history.data)
  const listMounted = items.length > 0 && !history.isLoading
  const { containerRef, contentRef, follow } = useAutoScroll<HTMLDivElement, HTMLDivElement>(
    listMounted ? conversationId : null,
  )

  const conversation = useMemo(
    () => conversations.data?.find((c) => c.id === conversationId) ?? null,
    [conversations.data, conversationId],
  )
  const modelList = useMemo(() => models.data ?? [], [models.data])
  const selectedModel = modelList.find((m) => m.id === modelId) ?? null

  // The conversation's saved model is adopted; otherwise the first model is the default.
  useEffect(() => {
    if (conversation?.model && modelList.some((m) => m.id === conversation.model)) setModelId(conversation.model)
    else if (!modelId && modelList.length > 0) setModelId(modelList[0].id)
  }, [conversation?.model, modelList, modelId])

  // A new conversation turns following back on.
  useEffect(() => follow(), [conversationId, follow])

  const onSettled = useCallback(() => {
    if (conversationId) void queryClient.invalidateQueries({ queryKey: chatKeys.history(conversationId) })
    void queryClient.invalidateQueries({ queryKey: ['conversations'] })
    void queryClient.invalidateQueries({ queryKey: ['user_balances'] })
  }, [conversationId, queryClient])

  if (status === 'signed-out') return <Navigate to="/login" replace />

  const closeOnSmallScreen = () => {
    if (window.innerWidth < SMALL_SCREEN_PX) setSidebarOpen(false)
  }
  const select = (id: string | null) => {
    setSearchParams(id ? { c: id } : {})
    closeOnSmallScreen()
  }
  const newChat = () => {
    if (create.isPending || !selectedModel) return
    create.mutate(selectedModel.id, { onSuccess: (c) => select(c.id) })
  }
  const chooseModel = (id: string) => {
    setModelId(id)
    if (conversation && conversation.model !== id) update.mutate({ id: conversation.id, model: id })
  }

  const send = async () => {
    const prompt = draft.trim()
    if (!prompt || sending) return
    if (!conversationId) {
      window.alert('Please select a conversation or create a new one first.')
      return
    }
    if (selectedModel && !selectedModel.isAvailable) {
      window.alert(
        `${selectedModel.name} is currently unavailable. No nodes are online for this model. Please select a different model or try again later.`,
      )
      return
    }
    follow()
    setDraft('')
    setSending(true)
    const key = `local-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`
    add({ key, conversationId, prompt })
    try {
      const result = await sendChat({
        conversation_id: conversationId,
        model_id: selectedModel?.id ?? '',
        prompt,
        temperature: temperature ?? defaultTemperature,
      })
      patch(key, { requestId: result.request_id })
      void queryClient.invalidateQueries({ queryKey: ['conversations'] })
    } catch (err) {
      patch(key, { sendError: `Error: ${errorMessage(err, 'Unknown error')}` })
    } finally {
      setSending(false)
    }
  }

  const empty = items.length === 0
  return (
    <div className="relative flex h-full min-h-0 overflow-hidden">
      <ConversationSidebar
        open={sidebarOpen}
        conversations={conversations.data ?? []}
        loading={conversations.isLoading}
        error={conversations.isError}
        selectedId={conversationId}
        creating={create.isPending || !selectedModel}
        onSelect={select}
        onNew={newChat}
        onRename={(id, title) => update.mutate({ id, title })}
        onDelete={(id) => remove.mutate(id, { onSuccess: () => id === conversationId && select(null) })}
        onClose={() => setSidebarOpen(false)}
      />
      <section className="flex min-w-0 flex-1 flex-col" aria-label="Chat">
        <ChatHeader
          sidebarToggle={
            <button
              type="button"
              onClick={() => setSidebarOpen((o) => !o)}
              aria-label={sidebarOpen ? 'Close sidebar' : 'Open sidebar'}
              aria-expanded={sidebarOpen}
              className="focus-ring rounded-lg p-2 text-slate-500 hover:bg-slate-100 hover:text-slate-900 dark:text-slate-400 dark:hover:bg-slate-800 dark:hover:text-white"
            >
              <PanelLeft className="h-5 w-5" aria-hidden />
            </button>
          }
          conversation={conversation}
          onRename={(title) => conversation && update.mutate({ id: conversation.id, title })}
          showModelPicker={empty}
          models={modelList}
          modelsLoading={models.isLoading}
          selectedModel={selectedModel}
          onSelectModel={(m) => chooseModel(m.id)}
          temperature={temperature ?? defaultTemperature}
          onTemperature={setTemperature}
        />
        {selectedModel && !selectedModel.isAvailable && <ModelUnavailableBanner model={selectedModel.name} />}
        {conversationId && history.isLoading ? (
          <Spinner className="flex-1" />
        ) : empty ? (
          <ChatWelcome onNewChat={conversationId ? undefined : newChat} canCreate={!!selectedModel && !create.isPending} />
        ) : (
          <MessageList
            items={items}
            showCosts={showCosts}
            onSettled={onSettled}
            containerRef={containerRef}
            contentRef={contentRef}
          />
        )}
        <div className="mx-auto w-full max-w-3xl shrink-0 px-4 pt-2 pb-4 sm:px-6">
          <Composer value={draft} onChange={setDraft} onSend={send} sending={sending} empty={empty} />
          <ChatFooter
            balance={balance.data?.balance}
            draft={draft}
            showCosts={showCosts}
            onToggleCosts={() => setShowCosts(!showCosts)}
          />
        </div>
      </section>
    </div>
  )
}
