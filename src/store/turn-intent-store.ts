/**
 * TurnIntentStore: the durable obligations to send one successor turn. This module is the
 * service contract and the checks of its arguments; `turn-intent-store-sql.ts` implements it on
 * the controller database (SQLite or PostgreSQL).
 */
import { Context, Effect, type Option } from "effect"
import {
  type ClaimNotHeld,
  type IdentityCollision,
  type IntentNotFound,
  type InvalidFacts,
  InvalidInput
} from "../domain/errors.ts"
import type { FallbackFacts } from "../domain/facts.ts"
import { invalidId } from "../domain/identity.ts"
import { Cause, Resolution, type TurnIntent } from "../domain/turn-intent.ts"
import type { StoreFailure } from "./store-errors.ts"

export interface EnsureIntent {
  readonly sourceEventId: string
  readonly runId: string
  readonly workflowRef: string
  readonly targetSessionId: string
  readonly cause: Cause
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly facts: FallbackFacts
  /** Create (or make) the intent fallback-eligible right away. */
  readonly eligible?: boolean
}

export interface Claim {
  /** Caller-chosen claimant identity; a later resolve or release must present it. */
  readonly token: string
  /** How long the claim lives without being resolved or released. */
  readonly leaseMs: number
}

export interface ListQuery {
  readonly targetSessionId?: string
  readonly runId?: string
  /** `eligible`: pending and fallback-eligible. */
  readonly state?: "pending" | "eligible" | "resolved" | "all"
  /** 1 … MAX_LIST_LIMIT. */
  readonly limit: number
}

export const MAX_LIST_LIMIT = 1_000
export const MAX_LEASE_MS = 60 * 60_000

export interface TurnIntentStoreService {
  /** Create the intent, or return the existing one when all immutable fields match. */
  readonly ensure: (
    input: EnsureIntent
  ) => Effect.Effect<TurnIntent, IdentityCollision | InvalidInput | InvalidFacts | StoreFailure>
  readonly get: (intentId: string) => Effect.Effect<Option.Option<TurnIntent>, InvalidInput | StoreFailure>
  /**
   * Natural-resolution claim: the oldest pending intent of this run for this session that no
   * one else holds a live claim on. Eligibility does not matter here.
   */
  readonly claimForRun: (
    input: { readonly runId: string; readonly targetSessionId: string } & Claim
  ) => Effect.Effect<Option.Option<TurnIntent>, InvalidInput | StoreFailure>
  /** Fallback claim: up to `limit` eligible pending unclaimed intents, oldest eligibility first. */
  readonly claimEligibleForSession: (
    input: { readonly targetSessionId: string; readonly limit: number } & Claim
  ) => Effect.Effect<ReadonlyArray<TurnIntent>, InvalidInput | StoreFailure>
  /**
   * Set `eligibleAt` once (later calls keep the first time) and optionally refresh the facts.
   * A resolved intent is returned unchanged.
   */
  readonly makeEligible: (input: {
    readonly intentId: string
    readonly facts?: FallbackFacts
  }) => Effect.Effect<TurnIntent, IntentNotFound | InvalidInput | InvalidFacts | StoreFailure>
  /** Resolve with a live claim: sets resolvedAt, resolution and resolutionMessageId together. */
  readonly resolve: (input: {
    readonly intentId: string
    readonly token: string
    readonly resolution: Resolution
    readonly messageId: string
  }) => Effect.Effect<TurnIntent, ClaimNotHeld | IntentNotFound | InvalidInput | StoreFailure>
  /**
   * Extend the caller's claim to `leaseMs` from now; false when the token no longer holds it
   * (another claimant took it, it was released, or the intent is resolved; nothing changes then).
   * Delivery renews right before every send and while a sent message is unconfirmed.
   */
  readonly renew: (
    input: { readonly intentId: string } & Claim
  ) => Effect.Effect<boolean, InvalidInput | StoreFailure>
  /** Drop the caller's claim; false when the caller did not hold it (nothing changes then). */
  readonly release: (input: {
    readonly intentId: string
    readonly token: string
  }) => Effect.Effect<boolean, InvalidInput | StoreFailure>
  /** Bounded diagnostic listing ordered by requestedAt, then intentId. */
  readonly list: (query: ListQuery) => Effect.Effect<ReadonlyArray<TurnIntent>, InvalidInput | StoreFailure>
}

export class TurnIntentStore extends Context.Tag("pi-workflow-turns/TurnIntentStore")<
  TurnIntentStore,
  TurnIntentStoreService
>() {}

// --- Argument checks -----------------------------------------------------------------------------
// Plain functions that return an InvalidInput (or undefined), chained with `??` so the first
// failing one is the error, and `valid` to make that an effect. The messages are the contract's.

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
