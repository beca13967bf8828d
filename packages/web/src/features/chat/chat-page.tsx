import { PanelLeft } from 'lucide-react'
import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { Navigate, useSearchParams } from 'react-router'
import { Spinner } from '../../components/spinner.tsx'
import { useAuth } from '../../context/auth-context.tsx'
import { useBalance } from '../../hooks/use-balance.ts'
import { useStoredFlag } from '../../hooks/use-stored-flag.ts'
import { isTerminal } from './chat-types.ts'
import { ChatFooter } from './components/chat-footer.tsx'
import { ChatHeader } from './components/chat-header.tsx'
import { ChatWelcome } from './components/chat-welcome.tsx'
import { Composer } from './components/composer.tsx'
import { ConversationSidebar } from './components/conversation-sidebar.tsx'
import { MessageList } from './components/message-list.tsx'
import { ModelUnavailableBanner } from './components/model-unavailable-banner.tsx'
import {
  useAnyNodeOnline,
  useAvailableModels,
  useConversationMutations,
  useConversations,
  useDefaultTemperature,
  useModelSizes,
} from './conversations-api.ts'
import { historyRecords, useConversationHistory } from './history-api.ts'
import { useAutoScroll } from './use-auto-scroll.ts'
import { useChatItems } from './use-chat-items.ts'
import { useChatLive } from './use-chat-live.ts'
import { useQuote } from './use-quote.ts'
import { useSendMessage } from './use-send-message.ts'
import { useStopAnswer } from './use-stop-answer.ts'

const SMALL_SCREEN_PX = 768
const NO_CONVERSATIONS: never[] = []
const POLL_WITHOUT_REALTIME_MS = 1_500

/** The Chat screen (spec §2): sidebar, header, messages, composer, footer. */
export default function ChatPage() {
  const { status } = useAuth()
  const [searchParams, setSearchParams] = useSearchParams()
  const conversationId = searchParams.get('c')
  const [sidebarOpen, setSidebarOpen] = useState(() => window.innerWidth >= SMALL_SCREEN_PX)
  const [draft, setDraft] = useState('')
  const [modelId, setModelId] = useState<string | null>(null)
  const defaultTemperature = useDefaultTemperature()
  // The temperature a conversation created from here starts with.
  const [newChatTemperature, setNewChatTemperature] = useState<number | null>(null)
  const [showCosts, setShowCosts] = useStoredFlag('showCosts', true)

  const conversations = useConversations()
  const models = useAvailableModels()
  const balance = useBalance()
  const { create, update, remove } = useConversationMutations()

  const select = useCallback(
    (id: string | null) => {
      setSearchParams(id ? { c: id } : {})
      if (window.innerWidth < SMALL_SCREEN_PX) setSidebarOpen(false)
    },
    [setSearchParams],
  )
  const live = useChatLive(conversationId, { onConversationGone: () => select(null) })
  const [polling, setPolling] = useState(false)
  const history = useConversationHistory(conversationId, polling ? POLL_WITHOUT_REALTIME_MS : false)
  const records = useMemo(() => historyRecords(history.data), [history.data])
  // Without realtime, the open conversation is read again while an answer is still coming.
  useEffect(
    () => setPolling(live === 'down' && records.some((r) => !isTerminal(r.status))),
    [live, records],
  )

  const { items, add, patch } = useChatItems(conversationId, records)
  const empty = items.length === 0
  // Model sizes are shown in the picker, which shows only while the conversation is empty.
  const sizes = useModelSizes(empty && !history.isLoading)
  const listMounted = items.length > 0 && !history.isLoading
  const { containerRef, contentRef, follow } = useAutoScroll<HTMLDivElement, HTMLDivElement>(
    listMounted ? conversationId : null,
  )

  const conversation = useMemo(
    () => conversations.data?.find((c) => c.id === conversationId) ?? null,
    [conversations.data, conversationId],
  )
  const modelList = useMemo(
    () => (models.data ?? []).map((m) => ({ ...m, size: sizes.data?.get(m.id) ?? null })),
    [models.data, sizes.data],
  )
  const selectedModel = modelList.find((m) => m.id === modelId) ?? null
  const onlineNodes = useAnyNodeOnline(!!selectedModel && !selectedModel.isAvailable)
  const temperature = conversation?.temperature ?? newChatTemperature ?? defaultTemperature

  // The conversation's saved model is adopted; otherwise the first model is the default.
  useEffect(() => {
    if (conversation?.model && modelList.some((m) => m.id === conversation.model))
      setModelId(conversation.model)
    else if (!modelId && modelList.length > 0) setModelId(modelList[0].id)
  }, [conversation?.model, modelList, modelId])

  // A new conversation turns following back on.
  useEffect(() => follow(), [conversationId, follow])

  const knownRef = useRef(records)
  knownRef.current = records
  const knownIds = useCallback(() => new Set(knownRef.current.map((r) => r.id)), [])
  const { send, regenerate, sending } = useSendMessage({
    conversationId,
    model: selectedModel,
    temperature,
    knownIds,
    add,
    patch,
    follow,
  })
  const quote = useQuote(draft, conversationId, selectedModel?.id)
  const { fetchNextPage } = history
  const loadOlder = useCallback(() => void fetchNextPage(), [fetchNextPage])

  // Stable callbacks, so the memoised sidebar skips the renders a streamed answer causes.
  const creating = create.isPending
  const { mutate: createConversation } = create
  const { mutate: updateConversation } = update
  const { mutate: removeConversation } = remove
  const newChat = useCallback(() => {
    if (creating || !selectedModel) return
    createConversation({ model: selectedModel.id, temperature }, { onSuccess: (c) => select(c.id) })
  }, [creating, selectedModel, temperature, createConversation, select])
  const rename = useCallback(
    (id: string, title: string) => updateConversation({ id, title }),
    [updateConversation],
  )
  const deleteConversation = useCallback(
    (id: string) =>
      removeConversation(id, { onSuccess: () => id === conversationId && select(null) }),
    [removeConversation, conversationId, select],
  )
  const closeSidebar = useCallback(() => setSidebarOpen(false), [])
  const { stop, stoppingId } = useStopAnswer()

  if (status === 'signed-out') return <Navigate to="/login" replace />

  const chooseModel = (id: string) => {
    setModelId(id)
    if (conversation && conversation.model !== id) update.mutate({ id: conversation.id, model: id })
  }
  const saveTemperature = (value: number) => {
    if (conversation) update.mutate({ id: conversation.id, temperature: value })
    else setNewChatTemperature(value)
  }

  const last = items.at(-1)
  // The answer being written (queued or streaming): Stop ends it where it is.
  const open = [...items].reverse().find((i) => i.record && !isTerminal(i.record.status))?.record
  const regenerableKey =
    last?.record && isTerminal(last.record.status) && !sending ? last.key : null
  const available = balance.data ? balance.data.balance - balance.data.held : undefined
  return (
    <div className="relative flex h-full min-h-0 overflow-hidden">
      <ConversationSidebar
        open={sidebarOpen}
        conversations={conversations.data ?? NO_CONVERSATIONS}
        loading={conversations.isLoading}
        error={conversations.isError}
        selectedId={conversationId}
        creating={create.isPending || !selectedModel}
        onSelect={select}
        onNew={newChat}
        onRename={rename}
        onDelete={deleteConversation}
        onClose={closeSidebar}
      />
      {/* data-realtime: whether the open conversation's updates arrive live (tests wait for it). */}
      <section
        className="flex min-w-0 flex-1 flex-col"
        aria-label="Chat"
        data-realtime={conversationId ? live : undefined}
      >
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
          temperature={temperature}
          onSaveTemperature={saveTemperature}
        />
        {selectedModel && !selectedModel.isAvailable && (
          <ModelUnavailableBanner model={selectedModel.name} onlineNodes={onlineNodes.data} />
        )}
        {conversationId && history.isLoading ? (
          <Spinner className="flex-1" />
        ) : empty ? (
          <ChatWelcome
            onNewChat={conversationId ? undefined : newChat}
            canCreate={!!selectedModel && !create.isPending}
          />
        ) : (
          <MessageList
            key={conversationId}
            items={items}
            showCosts={showCosts}
            regenerableKey={regenerableKey}
            onRegenerate={regenerate}
            hasOlder={!!history.hasNextPage}
            loadingOlder={history.isFetchingNextPage}
            onLoadOlder={loadOlder}
            containerRef={containerRef}
            contentRef={contentRef}
          />
        )}
        <div className="mx-auto w-full max-w-3xl shrink-0 px-3 pt-2 pb-3 sm:px-6 sm:pb-4">
          <Composer
            value={draft}
            onChange={setDraft}
            onSend={() => void send(draft, setDraft)}
            sending={sending}
            empty={empty}
            streaming={!!open}
            stopping={!!open && stoppingId === open.id}
            onStop={() => open && void stop(open)}
          />
          <ChatFooter
            available={available}
            draft={draft}
            quote={quote}
            showCosts={showCosts}
            onToggleCosts={() => setShowCosts(!showCosts)}
          />
        </div>
      </section>
    </div>
  )
}
