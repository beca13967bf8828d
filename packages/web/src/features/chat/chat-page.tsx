export default function ChatPage() {
  return <div>Chat</div>
}
