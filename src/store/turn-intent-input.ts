/**
 * The TurnIntentStore's argument checks: plain functions that return an InvalidInput (or
 * undefined), chained with `??` so the first failing one is the error, and `valid` to make that
 * an effect. The messages are the contract's.
 */
import { Effect } from "effect"
import { InvalidInput } from "../domain/errors.ts"
import { invalidId } from "../domain/identity.ts"
import { Cause, Resolution } from "../domain/turn-intent.ts"
import { type Claim, MAX_LEASE_MS } from "./turn-intent-store.ts"

const CAUSES: ReadonlySet<string> = new Set(Cause.literals)
const RESOLUTIONS: ReadonlySet<string> = new Set(Resolution.literals)

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

/** The check's error as a failure; nothing to do when it found none. */
export const valid = (error: InvalidInput | undefined): Effect.Effect<void, InvalidInput> =>
  error === undefined ? Effect.void : Effect.fail(error)
