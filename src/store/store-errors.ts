/**
 * How the stores report infrastructure failures: an SQL error (the driver's) or a stored row
 * that does not decode becomes the operation's `StoreFailure`, in the driver's own words, with
 * a `reason` decided from the driver's codes (`failure-reason.ts`); the operation's domain
 * errors pass through unchanged. Every store maps with `asStoreFailure`.
 * The store's own error types live here too: a failure, an incompatible or legacy database.
 */
import * as SqlError from "@effect/sql/SqlError"
import { Effect, ParseResult, Schema } from "effect"
import { reasonOf, StoreFailureReason } from "./failure-reason.ts"

export { StoreFailureReason } from "./failure-reason.ts"

/**
 * A store failed (a lock, read-only, unreachable, I/O, …). `reason` is what code acts on;
 * `message` is for people. Wraps the underlying error. Built without a reason, it is `Other`.
 */
export class StoreFailure extends Schema.TaggedError<StoreFailure>()("StoreFailure", {
  operation: Schema.String,
  reason: Schema.optionalWith(StoreFailureReason, { default: () => "Other" }),
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
 * budget (reason `Lock`: SQLite's busy and locked codes; PostgreSQL's `lock_timeout`, SQLSTATE
 * 55P03, which the PostgreSQL layer sets to the same budget). Read-only files, I/O errors and
 * bad rows are not retried.
 */
export const isLockFailure = (error: { readonly _tag: string }): boolean =>
  error._tag === "StoreFailure" && "reason" in error && error.reason === "Lock"

/** What a store operation may meet below its own logic. */
export type InfraError = SqlError.SqlError | ParseResult.ParseError

const isInfraError = (error: unknown): error is InfraError =>
  error instanceof SqlError.SqlError || ParseResult.isParseError(error)

/** One SQL (or row decoding) error as `operation`'s `StoreFailure`. */
export const storeFailure =
  (operation: string) =>
  (error: { readonly cause?: unknown; readonly message: string }): StoreFailure =>
    new StoreFailure({
      operation,
      reason: reasonOf(error),
      message: String(error.cause ?? error.message),
      cause: error
    })

/** `effect` with its SQL and decoding errors as `operation`'s `StoreFailure`; other errors unchanged. */
export const asStoreFailure =
  (operation: string) =>
  <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, Exclude<E, Extract<E, InfraError>> | StoreFailure, R> =>
    Effect.catchIf(
      effect,
      (error): error is Extract<E, InfraError> => isInfraError(error),
      (error) => Effect.fail(storeFailure(operation)(error))
    )
