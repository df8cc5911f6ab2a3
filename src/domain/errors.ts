/**
 * Typed errors of the domain and its operations (the stores' own failures are in
 * src/store/store-errors.ts). Each carries enough context to act on
 * without reading a stack trace; none of them means that something durable changed.
 */
import { Schema } from "effect"

/** A caller-supplied value is outside its bounds (empty ID, over-long ID, bad limit, bad lease). */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  field: Schema.String,
  message: Schema.String
}) {}

/** Fallback facts failed the `pi-workflows.deferred-turn-facts.v1` rules. */
export class InvalidFacts extends Schema.TaggedError<InvalidFacts>()("InvalidFacts", {
  message: Schema.String
}) {}

/** The same deterministic ID was reused with different immutable facts. */
export class IdentityCollision extends Schema.TaggedError<IdentityCollision>()("IdentityCollision", {
  intentId: Schema.String,
  fields: Schema.Array(Schema.String)
}) {
  override get message() {
    return `turn intent ${this.intentId} already exists with different ${this.fields.join(", ")}`
  }
}

/** No intent with this ID exists. */
export class IntentNotFound extends Schema.TaggedError<IntentNotFound>()("IntentNotFound", {
  intentId: Schema.String
}) {
  override get message() {
    return `turn intent ${this.intentId} does not exist`
  }
}

/**
 * The caller's claim token does not hold a live claim: it expired, another claimant took
 * the intent, or the intent was already resolved.
 */
export class ClaimNotHeld extends Schema.TaggedError<ClaimNotHeld>()("ClaimNotHeld", {
  intentId: Schema.String,
  reason: Schema.Literal("notClaimed", "otherClaimant", "expired", "resolved")
}) {
  override get message() {
    return `claim on turn intent ${this.intentId} is not held (${this.reason})`
  }
}
