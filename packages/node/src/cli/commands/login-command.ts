/**
 * @module login-command
 * `meshwork-node login --server URL [--device NAME]`: link this machine to an account.
 */
import { hostname } from 'node:os'
import type { CommandModule } from 'yargs'
import { writeCredentials } from '../../auth/credentials-store.ts'
import { LinkDeniedError, LinkExpiredError, linkDevice } from '../../auth/link-device.ts'
import { resolveNodeHome } from '../../node-home.ts'
import { openBrowser } from '../utils/open-browser.ts'

interface LoginArgs {
  server: string
  device: string
  open: boolean
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
      }),
  handler: async ({ server, device, open }) => {
    const home = resolveNodeHome()
    try {
      const linked = await linkDevice({
        server,
        deviceName: device,
        onApproveUrl: (url) => {
          process.stdout.write(`Open this URL to approve this node:\n${url}\n`)
          process.stdout.write('Waiting for approval...\n')
          if (open) openBrowser(url)
        },
      })
      const path = await writeCredentials(home, {
        server,
        node_id: linked.nodeId,
        credential: linked.credential,
      })
      process.stdout.write(`Node linked (id ${linked.nodeId}). Credentials saved to ${path}\n`)
      process.stdout.write('Run `meshwork-node start` to connect it.\n')
    } catch (err) {
      process.exitCode = 1
      if (err instanceof LinkDeniedError) {
        process.stderr.write(`Authorization denied: ${err.message}\n`)
      } else if (err instanceof LinkExpiredError) {
        process.stderr.write(
          `Authorization failed: ${err.message}. Run \`meshwork-node login\` again.\n`,
        )
      } else {
        process.stderr.write(`Login failed: ${err instanceof Error ? err.message : String(err)}\n`)
      }
    }
  },
}
