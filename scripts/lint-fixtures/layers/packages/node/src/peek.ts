// Planted violation: another package reaching into the coordinator's internals.
import { high } from '../../server/src/core/high.ts'
export const peek = high
