/** The test-only crash variable (docs/reliability.md). Dependency-free: the Pi entry reads it too. */
export const CRASH_AT_ENV = "PI_WORKFLOW_TURNS_CRASH_AT"

/**
 * The crash point between Pi's append of a terminal successor and the model request for it:
 * the extension kills Pi in `before_provider_request` when the request's newest message is one.
 */
export const BEFORE_SUCCESSOR_REQUEST = "beforeSuccessorRequest"

/**
 * The crash point right after the extension recorded that the model request for a terminal
 * successor left the process: the request reached the provider, and its reply dies with Pi.
 */
export const AFTER_SUCCESSOR_REQUEST = "afterSuccessorRequest"
