import type { ReactNode } from 'react'
import type { ChatModel, ConversationRecord } from '../chat-types.ts'
import { ChatSettingsDialog } from './chat-settings-dialog.tsx'
import { ConversationTitle } from './conversation-title.tsx'
import { ModelPicker } from './model-picker.tsx'

export interface ChatHeaderProps {
  sidebarToggle: ReactNode
  conversation: ConversationRecord | null
  onRename: (title: string) => void
  showModelPicker: boolean
  models: ChatModel[]
  modelsLoading: boolean
  selectedModel: ChatModel | null
  onSelectModel: (model: ChatModel) => void
  temperature: number
  onSaveTemperature: (value: number) => void
}

/** Sidebar toggle, editable title, model picker (while empty) and the settings gear. */
export function ChatHeader(props: ChatHeaderProps) {
  const { conversation, selectedModel } = props
  return (
    <div className="flex h-14 shrink-0 items-center gap-2 border-b border-slate-200 px-2 sm:px-4 dark:border-slate-800">
      {props.sidebarToggle}
      <div className="min-w-0 flex-1">
        {conversation ? (
          <ConversationTitle
            key={conversation.id}
            title={conversation.title || 'New Chat'}
            onSave={props.onRename}
          />
        ) : (
          <span className="block truncate px-1 text-base font-semibold text-slate-900 dark:text-white">
            New conversation
          </span>
        )}
      </div>
      {props.showModelPicker ? (
        <ModelPicker
          models={props.models}
          loading={props.modelsLoading}
          selected={selectedModel}
          onSelect={props.onSelectModel}
        />
      ) : (
        selectedModel && (
          <span className="hidden max-w-[40%] truncate rounded-full bg-slate-100 px-3 py-1 text-xs font-medium text-slate-600 sm:inline dark:bg-slate-800 dark:text-slate-300">
            {selectedModel.name}
          </span>
        )
      )}
      <ChatSettingsDialog temperature={props.temperature} onSave={props.onSaveTemperature} />
    </div>
  )
}
