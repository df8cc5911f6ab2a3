/**
 * The TurnIntentStore's argument checks: plain functions that return the first InvalidInput (or
 * undefined), run inside one `Effect.suspend` by `checked`. Every store call makes them, so
 * they cost no Effect step each (docs/bench.md); the messages are the contract's.
 */
import { Effect } from "effect"
import { InvalidInput } from "../domain/errors.ts"
import { invalidId } from "../domain/identity.ts"
import { CAUSES, RESOLUTIONS } from "./turn-intent-rows.ts"
import { type Claim, MAX_LEASE_MS } from "./turn-intent-store.ts"

export const invalidInteger = (
  field: string,
  value: number,
  min: number,
  max: number
): InvalidInput | undefined =>
  Number.isSafeInteger(value) && value >= min && value <= max
    ? undefined
    : new InvalidInput({ field, message: `${field} must be an integer from ${min} to ${max}` })

export const invalidClaim = (claim: Claim): InvalidInput | undefined =>
  invalidId("token", claim.token) ?? invalidInteger("leaseMs", claim.leaseMs, 1, MAX_LEASE_MS)

// Callers are typed, but the values cross into CHECK constraints: reject them as input first.
export const invalidCause = (cause: string): InvalidInput | undefined =>
  CAUSES.has(cause)
    ? undefined
    : new InvalidInput({
        field: "cause",
        message:
          "cause must be agentCancelled, timedOut, failed, launchFailed, controllerInterrupted, claimLost or completed"
      })

export const invalidResolution = (resolution: string): InvalidInput | undefined =>
  RESOLUTIONS.has(resolution)
    ? undefined
    : new InvalidInput({
        field: "resolution",
        message: "resolution must be workflowPrompt, presentation or fallback"
      })

export const invalidState = (state: string | undefined): InvalidInput | undefined =>
  state === undefined ||
  state === "pending" ||
  state === "eligible" ||
  state === "resolved" ||
  state === "all"
    ? undefined
    : new InvalidInput({ field: "state", message: "state must be pending, eligible, resolved or all" })

/** Run the checks when the effect runs; the first failing one is the error. */
export const checked = <A, E>(
  check: () => InvalidInput | undefined,
  run: () => Effect.Effect<A, E>
): Effect.Effect<A, E | InvalidInput> =>
  Effect.suspend((): Effect.Effect<A, E | InvalidInput> => {
    const error = check()
    return error === undefined ? run() : Effect.fail(error)
  })
