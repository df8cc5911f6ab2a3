/**
 * Why a run is `waiting` after the user's Escape: stored as the run's parked reason, so the
 * hold survives a restart and every view can tell it from a pause.
 */
export const USER_HOLD_REASON = "the user interrupted the step (Escape)"
