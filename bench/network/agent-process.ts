/**
 * @module The bench's node agent in a process of its own, as a real node is: the bench's client
 * work (the send's answer, the realtime stream) then does not hold up the agent's start of a job.
 * Takes its options as JSON in argv[2]; reports each job start to the parent as a monotonic
 * timestamp (ms, process.hrtime: the same clock in every process), and stops on 'stop'.
 */
import { startAgent, type StartAgentOptions } from '@meshwork/node'

const options = JSON.parse(process.argv[2] ?? '{}') as StartAgentOptions
const agent = await startAgent(options)
agent.events.on('job', (e) => {
  if (e.kind === 'started') process.send?.({ started: Number(process.hrtime.bigint()) / 1e6 })
})
process.on('message', (m) => {
  if (m !== 'stop') return
  void agent.stop().then(() => process.exit(0))
})
process.send?.('ready')
