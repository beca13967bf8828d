import { a } from '../chat/a.ts'
export const b = () => a
