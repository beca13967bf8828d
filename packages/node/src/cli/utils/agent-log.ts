/**
 * @module The agent's log, the coordinator's way (pino): readable lines by default, one JSON
 * object a line with `--json` (for a service manager or a log collector). `MESHWORK_LOG_LEVEL`
 * (trace, debug, info, warn, error, fatal, silent; default info) sets the level either way.
 */
import { pino, type DestinationStream, type Logger } from 'pino'
import pretty from 'pino-pretty'

const levels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

export function createAgentLog(options: {
  json: boolean
  out?: NodeJS.WritableStream & { isTTY?: boolean }
}): Logger {
  const asked = process.env.MESHWORK_LOG_LEVEL
  const level = asked && levels.includes(asked) ? asked : 'info'
  const out = options.out ?? process.stdout
  const destination: DestinationStream = options.json
    ? (out as DestinationStream)
    : pretty({
        destination: out,
        colorize: Boolean(out.isTTY),
        sync: true,
        translateTime: 'SYS:isoDateTime',
        ignore: 'pid,hostname',
        singleLine: true,
      })
  return pino({ level, base: { pid: process.pid } }, destination)
}
