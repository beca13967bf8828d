export { waitUntil } from './wait-until.ts'
export { modelMirror, requireTestModels } from './test-models.ts'
export {
  approveAs,
  linkNode,
  startTestAgent,
  type Approver,
  type LinkedNode,
  type TestAgent,
} from './linked-agent.ts'
