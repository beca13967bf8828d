// Planted violation: a tool (lowest layer) importing core (a higher one).
import { high } from '../core/high.ts'
export const low = () => high
