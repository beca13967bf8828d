/**
 * The ceiling of the records API on this machine: a bare node:http + better-sqlite3 server that
 * opens the coordinator's own SQLite file (read-only) and answers bench/records' read calls with
 * the same JSON, doing the minimum: no framework, no auth, no rule compiler, no query builder.
 * It runs the same SQL shape as the coordinator (the owner filter + sort + limit, a COUNT for the
 * totals; getOne by id) through statements prepared once, and builds PocketBase's record JSON
 * (keys in alphabetical order) with JSON.stringify. Started by run.ts in its own process:
 *   node --import tsx bare-records.ts <sqlite file> <port>
 */
import { createServer, type ServerResponse } from 'node:http'
import Database from 'better-sqlite3'

const [file, port] = process.argv.slice(2)
const db = new Database(file, { readonly: true, fileMustExist: true })
db.pragma('busy_timeout = 5000')

const list = db.prepare(
  `SELECT * FROM conversations WHERE user = ? ORDER BY last_message_at DESC, created DESC, id DESC LIMIT ? OFFSET ?`,
)
const count = db.prepare(`SELECT COUNT(*) AS n FROM conversations WHERE user = ?`)
const one = db.prepare(`SELECT * FROM conversations WHERE id = ?`)

type Row = Record<string, string | number | null>

/** PocketBase's record JSON for a conversation: alphabetical keys, '' for empty text/relations. */
function record(row: Row) {
  return {
    collectionId: 'pbc_conversations',
    collectionName: 'conversations',
    created: row.created ?? '',
    id: row.id,
    last_message_at: row.last_message_at ?? '',
    message_count: Number(row.message_count ?? 0),
    model: row.model ?? '',
    temperature: Number(row.temperature ?? 0),
    title: row.title ?? '',
    updated: row.updated ?? '',
    user: row.user ?? '',
  }
}

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
  })
  res.end(text)
}

const base = '/api/collections/conversations/records'
const userFilter = /^user\s*=\s*"([^"]+)"$/

createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x')
  if (url.pathname === '/api/health') return send(res, 200, { code: 200 })
  if (url.pathname === base) {
    const q = url.searchParams
    const user = userFilter.exec(q.get('filter') ?? '')?.[1]
    if (!user) return send(res, 400, { message: 'bare server: filter user="…" only' })
    const page = Number(q.get('page') ?? 1)
    const perPage = Number(q.get('perPage') ?? 30)
    const rows = list.all(user, perPage, (page - 1) * perPage) as Row[]
    const skip = q.get('skipTotal') === '1'
    const totalItems = skip ? -1 : (count.get(user) as { n: number }).n
    return send(res, 200, {
      items: rows.map(record),
      page,
      perPage,
      totalItems,
      totalPages: skip ? -1 : Math.ceil(totalItems / perPage),
    })
  }
  if (url.pathname.startsWith(base + '/')) {
    const row = one.get(url.pathname.slice(base.length + 1)) as Row | undefined
    if (!row) return send(res, 404, { data: {}, message: 'not found', status: 404 })
    return send(res, 200, record(row))
  }
  send(res, 404, { data: {}, message: 'not found', status: 404 })
}).listen(Number(port), '127.0.0.1')

// run.ts ends it with SIGTERM; exiting (rather than dying) lets `--cpu-prof` write its profile.
process.on('SIGTERM', () => process.exit(0))
