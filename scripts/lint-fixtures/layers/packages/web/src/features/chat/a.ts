// Planted violations: one feature importing another, and a cycle.
import { b } from '../nodes/b.ts'
export const a = () => b()
