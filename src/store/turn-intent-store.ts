/**
 * TurnIntentStore: the durable obligations to send one successor turn. This module is the
 * service contract; `turn-intent-store-sqlite.ts` implements it on the controller database.
 */
import { Context, type Effect, type Option } from "effect"
import type {
  ClaimNotHeld,
  IdentityCollision,
  IntentNotFound,
  InvalidFacts,
  InvalidInput
} from "../domain/errors.ts"
import type { StoreFailure } from "./store-errors.ts"
import type { FallbackFacts } from "../domain/facts.ts"
import type { Cause, Resolution, TurnIntent } from "../domain/turn-intent.ts"

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
