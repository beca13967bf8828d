/**
 * @module Why a node turns a job offer down (`job_rejected.reason`). The coordinator acts on these
 * texts (a full node is asked again later; one not serving the model is passed over), so the agent
 * and the coordinator take them from here; any other reason is the node's own words.
 */
export const JOB_REJECT_REASONS = {
  /** Every slot is taken (or the agent is shutting down). */
  noSlot: 'No free job slot',
  /** The model is not loaded for serving on this node. */
  notServing: 'Model is not being served by this node',
} as const
