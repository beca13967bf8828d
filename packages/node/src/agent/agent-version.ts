/** Version the agent reports in `hello`. */
export const AGENT_VERSION = '0.1.0'
