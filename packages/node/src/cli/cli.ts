/**
 * @module cli
 * `meshwork-node`: registers the commands and turns on strict parsing; nothing else lives here.
 */
import yargs from 'yargs'
import { hideBin } from 'yargs/helpers'
import { loginCommand } from './commands/login-command.ts'
import { startCommand } from './commands/start-command.ts'

// Every promise of the agent is awaited or caught (`npm run check:promises`); one that is not is
// a bug, logged loudly, and the agent goes on with its other jobs instead of dying with them.
process.on('unhandledRejection', (reason) => {
  console.error('meshwork-node: UNHANDLED PROMISE REJECTION (a bug); the agent goes on:', reason)
})

await yargs(hideBin(process.argv))
  .scriptName('meshwork-node')
  .command(loginCommand)
  .command(startCommand)
  .demandCommand(1, 'Choose a command: login or start')
  .strict()
  .strictCommands()
  .help()
  .parseAsync()
