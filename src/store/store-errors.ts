/**
 * How the stores report infrastructure failures: an SQL error (the driver's) or a stored row
 * that does not decode becomes the operation's `StoreFailure`, in the driver's own words; the
 * operation's domain errors pass through unchanged. Every store maps with `asStoreFailure`.
 */
import * as SqlError from "@effect/sql/SqlError"
import { Effect, ParseResult } from "effect"
import { StoreFailure } from "../domain/errors.ts"

/** What a store operation may meet below its own logic. */
export type InfraError = SqlError.SqlError | ParseResult.ParseError

const isInfraError = (error: unknown): error is InfraError =>
  error instanceof SqlError.SqlError || ParseResult.isParseError(error)

/** One SQL (or row decoding) error as `operation`'s `StoreFailure`. */
export const storeFailure =
  (operation: string) =>
  (error: { readonly cause?: unknown; readonly message: string }): StoreFailure =>
    new StoreFailure({ operation, message: String(error.cause ?? error.message), cause: error })

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
