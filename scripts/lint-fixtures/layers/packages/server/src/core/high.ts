export const high = 1
