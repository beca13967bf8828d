import type { Sampling } from '@meshwork/protocol'

/** What the coordinator sends for a chat message (its config defaults), at temperature 0 so runs
 * can be compared token for token. */
export const greedySampling: Sampling = {
  temperature: 0,
  top_p: 0.9,
  top_k: 40,
  repeat_penalty: 1.1,
  frequency_penalty: 0,
  presence_penalty: 0,
  max_tokens: 256,
  context_length: 8000,
}
