/** The test-only crash variable (docs/reliability.md). Dependency-free: the Pi entry reads it too. */
export const CRASH_AT_ENV = "PI_WORKFLOW_TURNS_CRASH_AT"

/**
 * The crash point between Pi's append of a terminal successor and the model request for it:
 * the extension's `context` handler kills Pi when the request's newest message is one.
 */
export const BEFORE_SUCCESSOR_REQUEST = "beforeSuccessorRequest"
