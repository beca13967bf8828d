/**
 * @module login-command
 * `meshwork-node login --server URL [--device NAME]`: link this machine to an account.
 */
import { hostname } from 'node:os'
import type { CommandModule } from 'yargs'
import { credentialsPath, readCredentials, writeCredentials } from '../../auth/credentials-store.ts'
import { LinkDeniedError, LinkExpiredError, linkDevice } from '../../auth/link-device.ts'
import { resolveNodeHome } from '../../node-home.ts'
import { openBrowser } from '../utils/open-browser.ts'
import { printable } from '../utils/printable.ts'
import { serverUrlProblem } from '../utils/server-url.ts'

interface LoginArgs {
  server: string
  device: string
  open: boolean
  force: boolean
}

export const loginCommand: CommandModule<object, LoginArgs> = {
  command: 'login',
  describe: 'Link this node to your Meshwork account (approve it in the browser)',
  builder: (y) =>
    y
      .option('server', {
        type: 'string',
        demandOption: true,
        describe: 'Coordinator URL, e.g. http://localhost:8090',
      })
      .option('device', {
        type: 'string',
        default: hostname(),
        describe: 'Device name shown to you',
      })
      .option('open', {
        type: 'boolean',
        default: true,
        describe: 'Open the approve URL in a browser',
      })
      .option('force', {
        type: 'boolean',
        default: false,
        describe: 'Link again even if this machine is linked already (a new node)',
      }),
  handler: async ({ server, device, open, force }) => {
    const problem = serverUrlProblem(server)
    if (problem) {
      process.stderr.write(`${problem}\n`)
      process.exitCode = 1
      return
    }
    const home = resolveNodeHome()
    const linked = await readCredentials(home).catch(() => null)
    if (linked && !force) {
      // Linking again would make a second node for this machine: say so instead.
      const same = sameServer(linked.server, server)
      const out = same ? process.stdout : process.stderr
      out.write(
        `This machine is already linked to ${new URL(linked.server).origin} as node ${linked.node_id} (${credentialsPath(home)}).\n` +
          (same
            ? 'Run `meshwork-node start` to connect it.\n'
            : `It was not linked to ${new URL(server).origin}.\n`) +
          `To link it again as a new node, run \`meshwork-node login --server ${server} --force\` (then delete the old node on My Nodes).\n`,
      )
      if (!same) process.exitCode = 1
      return
    }
    try {
      const linked = await linkDevice({
        server,
        deviceName: device,
        onApproveUrl: (url) => {
          // The URL, the node id and the errors below are the server's words: no terminal escapes.
          process.stdout.write(`Open this URL to approve this node:\n${printable(url)}\n`)
          process.stdout.write('Waiting for approval...\n')
          if (open) openBrowser(url)
        },
      })
      const path = await writeCredentials(home, {
        server,
        node_id: linked.nodeId,
        credential: linked.credential,
      })
      process.stdout.write(
        `Node linked (id ${printable(linked.nodeId)}). Credentials saved to ${path}\n`,
      )
      process.stdout.write('Run `meshwork-node start` to connect it.\n')
    } catch (err) {
      process.exitCode = 1
      if (err instanceof LinkDeniedError) {
        process.stderr.write(`Authorization denied: ${printable(err.message)}\n`)
      } else if (err instanceof LinkExpiredError) {
        process.stderr.write(
          `Authorization failed: ${printable(err.message)}. Run \`meshwork-node login\` again.\n`,
        )
      } else {
        const message = err instanceof Error ? err.message : String(err)
        process.stderr.write(`Login failed: ${printable(message)}\n`)
      }
    }
  },
}

function sameServer(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin
  } catch {
    return false
  }
}
