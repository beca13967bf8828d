// Planted violation (scripts/lint.test.ts): a promise nobody awaits.
async function save(): Promise<void> {}

export function handler(): void {
  save()
}
