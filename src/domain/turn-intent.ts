/** The turn intent record and its closed value sets, as the rest of the code sees them. */
import { Schema } from "effect"
import { FallbackFacts } from "./facts.ts"

export const Cause = Schema.Literal(
  "agentCancelled",
  "timedOut",
  "failed",
  "launchFailed",
  "controllerInterrupted",
  "claimLost",
  // The terminal turn of a completed run: its presentation or, when that never arrives, a fallback.
  "completed"
)
export type Cause = typeof Cause.Type

export const Resolution = Schema.Literal("workflowPrompt", "presentation", "fallback")
export type Resolution = typeof Resolution.Type

/** Node ID recorded for events that happen before any node runs (queued launch activation). */
export const LAUNCH_NODE = "$launch"

/** Longest ID or key the controller store accepts. */
export const MAX_ID_LENGTH = 512

export const TurnIntent = Schema.Struct({
  intentId: Schema.String,
  sourceEventId: Schema.String,
  runId: Schema.String,
  workflowRef: Schema.String,
  targetSessionId: Schema.String,
  cause: Cause,
  nodeId: Schema.NullOr(Schema.String),
  attemptId: Schema.NullOr(Schema.String),
  facts: FallbackFacts,
  requestedAt: Schema.String,
  eligibleAt: Schema.NullOr(Schema.String),
  resolvedAt: Schema.NullOr(Schema.String),
  resolution: Schema.NullOr(Resolution),
  resolutionMessageId: Schema.NullOr(Schema.String),
  deliveryClaimToken: Schema.NullOr(Schema.String),
  deliveryClaimExpiresAt: Schema.NullOr(Schema.Number)
})
export type TurnIntent = typeof TurnIntent.Type

export const isResolved = (intent: TurnIntent): boolean => intent.resolvedAt !== null
export const isEligible = (intent: TurnIntent): boolean => intent.eligibleAt !== null

/** The fields that may never change once an intent exists. */
export const IMMUTABLE_FIELDS = [
  "sourceEventId",
  "runId",
  "workflowRef",
  "targetSessionId",
  "cause",
  "nodeId",
  "attemptId"
] as const satisfies ReadonlyArray<keyof TurnIntent>
