/**
 * @module Canary prompts: what a person might type as the first message of a chat, drawn from
 * templates and word lists (tens of thousands of combinations), so a node's owner cannot list the
 * canaries and answer only those honestly. Randomness comes from the caller (tests pass a seed).
 */

const openers = [
  'Tell me a story about {who} who {does}.',
  'Can you tell me a story about {who} and {thing}?',
  'Write a short story where {who} {does}.',
  'Once upon a time there was {who}. What happened next?',
  'I want a bedtime story about {who} {where}.',
  'tell me a story about {who}',
  'Write a story for my little sister about {who} {where}.',
  'What would happen if {who} found {thing} {where}?',
  'Please write a happy story about {who} who {does}.',
  'Make up a story about {thing} {where}.',
  'Can you write a funny story about {who}?',
  'Story time! {who} {does}. Go!',
]

const who = [
  'a little girl named Lily',
  'a boy named Tom',
  'a small brown dog',
  'a curious cat',
  'a brave little bird',
  'a friendly dragon',
  'an old fisherman',
  'two best friends',
  'a shy rabbit',
  'a big bear',
  'a tiny mouse',
  'a princess named Sue',
  'a robot who wanted a friend',
  'a girl named Mia and her mom',
  'a lost puppy',
  'a happy frog',
  'a kind farmer',
  'a little fish',
]

const does = [
  'wanted to fly',
  'lost a favourite toy',
  'made a new friend',
  'was afraid of the dark',
  'found a magic stone',
  'wanted to help everyone',
  'learned to share',
  'went on a big adventure',
  'baked a cake for a friend',
  'could not find the way home',
  'had a very busy day',
  'wanted to see the sea',
]

const things = [
  'a red ball',
  'a shiny key',
  'a big box of toys',
  'a lost kite',
  'a secret door',
  'a little boat',
  'a magic hat',
  'a jar of honey',
  'a broken bike',
  'a golden star',
]

const where = [
  'in the park',
  'in the forest',
  'at the beach',
  'in a small town',
  'on a farm',
  'under the sea',
  'in the garden',
  'at school',
  'on a rainy day',
  'in the mountains',
]

const pick = <T>(list: T[], random: () => number): T => list[Math.floor(random() * list.length)]

/** One canary prompt. */
export function canaryPrompt(random: () => number = Math.random): string {
  return pick(openers, random)
    .replace('{who}', pick(who, random))
    .replace('{does}', pick(does, random))
    .replace('{thing}', pick(things, random))
    .replace('{where}', pick(where, random))
    .replace(/^(\w)/, (c) => c.toUpperCase())
}

/** A small deterministic generator (mulberry32) for tests and measurements. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
