/**
 * @module cli
 * `meshwork-node`: registers the commands and turns on strict parsing; nothing else lives here.
 */
import yargs from 'yargs'
import { hideBin } from 'yargs/helpers'
import { loginCommand } from './commands/login-command.ts'
import { startCommand } from './commands/start-command.ts'

await yargs(hideBin(process.argv))
  .scriptName('meshwork-node')
  .command(loginCommand)
  .command(startCommand)
  .demandCommand(1, 'Choose a command: login or start')
  .strict()
  .strictCommands()
  .help()
  .parseAsync()
