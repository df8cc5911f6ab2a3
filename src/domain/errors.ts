/**
 * Typed errors shared by the domain and the stores. Each carries enough context to act on
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

/** The SQLite store failed (busy, read-only, I/O, …). Wraps the underlying error. */
export class StoreFailure extends Schema.TaggedError<StoreFailure>()("StoreFailure", {
  operation: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

/**
 * The database holds pending `launch_failure` notifications from the earlier alpha contract.
 * They are not migrated or deleted; the operator resets the store.
 */
export class LegacyLaunchNotifications extends Schema.TaggedError<LegacyLaunchNotifications>()(
  "LegacyLaunchNotifications",
  { databasePath: Schema.String, pending: Schema.Number }
) {
  override get message() {
    return (
      `The controller store ${this.databasePath} has ${this.pending} pending launch_failure ` +
      "notification(s) from an earlier alpha release; this release replaces them with turn intents " +
      "and will not reinterpret or delete them. To reset the controller store: stop Pi, move " +
      `${this.databasePath} (and its -wal and -shm files, if present) aside, then start Pi again; ` +
      "a fresh store is created on open."
    )
  }
}

/** The database belongs to another schema family or version. */
export class IncompatibleStore extends Schema.TaggedError<IncompatibleStore>()("IncompatibleStore", {
  databasePath: Schema.String,
  found: Schema.String
}) {
  override get message() {
    return `The database ${this.databasePath} has schema "${this.found}", expected "pi-workflows.controller-store.v1"`
  }
}

/**
 * A store failure that a later attempt can fix: another connection held a lock past the busy
 * budget. Read-only files, I/O errors and bad rows are not retried.
 */
export const isLockFailure = (error: { readonly _tag: string; readonly message: string }): boolean =>
  error._tag === "StoreFailure" &&
  /SQLITE_BUSY|SQLITE_LOCKED|database is locked|database table is locked/i.test(error.message)
