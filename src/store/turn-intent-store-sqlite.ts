/**
 * TurnIntentStore on the controller SQLite database. Every state change is one conditional
 * statement (`UPDATE … WHERE <state still allows it> RETURNING *`), so two claimants in two
 * processes can never both win, and no read-then-write window exists to lose a race in.
 *
 * Store calls sit on every abort and every delivery, so each one is kept close to the cost of
 * its SQL (docs/bench.md): statements are prepared once on the Database's fast path and step
 * rows as value arrays, arguments are checked by plain functions inside one `Effect.suspend`
 * (turn-intent-input.ts), rows are decoded by column checks (turn-intent-rows.ts), and on the
 * free connection a call takes no Effect step beyond that suspend and its result.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import { Clock, Effect, Layer, Option } from "effect"
import { ClaimNotHeld, IdentityCollision, IntentNotFound } from "../domain/errors.ts"
import { asStoreFailure, StoreFailure, storeFailure } from "./store-errors.ts"
import { validateFactsJson } from "../domain/facts.ts"
import { intentId as deriveIntentId, invalidId } from "../domain/identity.ts"
import { IMMUTABLE_FIELDS, type TurnIntent } from "../domain/turn-intent.ts"
import { Database, type DatabaseOptions, type OpenError, type PreparedStatement } from "./database.ts"
import {
  checked,
  invalidCause,
  invalidClaim,
  invalidInteger,
  invalidResolution,
  invalidState
} from "./turn-intent-input.ts"
import { type KnownFacts, toIntents, valuesToIntents } from "./turn-intent-rows.ts"
import { claimEligibleSql, listSql, SQL } from "./turn-intent-sql.ts"
import {
  type EnsureIntent,
  MAX_LIST_LIMIT,
  TurnIntentStore,
  type TurnIntentStoreService
} from "./turn-intent-store.ts"

const iso = (millis: number) => new Date(millis).toISOString()

/** SQLite compares TEXT with BINARY collation; sort results the same way, not by locale. */
const ordinal = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const all = (found: ReadonlyArray<TurnIntent>) => found
const first = (found: ReadonlyArray<TurnIntent>) => Option.fromNullable(found[0])

const byEligibility = (a: TurnIntent, b: TurnIntent) =>
  ordinal(a.eligibleAt ?? "", b.eligibleAt ?? "") || ordinal(a.intentId, b.intentId)

// RETURNING order is unspecified; callers rely on eligibility order.
const inEligibilityOrder = (claimed: ReadonlyArray<TurnIntent>) =>
  claimed.length < 2 ? claimed : [...claimed].sort(byEligibility)

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const database = yield* Database
  // A Database without the fast path (a wrapper or test double) gets the same SQL via SqlClient.
  const prepare =
    database.prepare ??
    ((text: string): PreparedStatement => ({ all: (params) => sql.unsafe<object>(text, params) }))
  const statement = {
    insert: prepare(SQL.insert),
    select: prepare(SQL.select),
    markEligible: prepare(SQL.markEligible),
    claimForRun: prepare(SQL.claimForRun),
    probeEligible: prepare(SQL.probeEligible),
    resolve: prepare(SQL.resolve),
    renew: prepare(SQL.renew),
    release: prepare(SQL.release)
  }
  // Texts with a constant limit (see turn-intent-sql.ts): one prepared statement per text. The
  // texts are few (filter combinations × the limits callers use), so the maps stay small. They
  // are keyed by what makes the text, so a call neither builds nor hashes the text again.
  const memo = <K>(text: (key: K) => string) => {
    const byKey = new Map<K, PreparedStatement>()
    return (key: K): PreparedStatement => {
      let prepared = byKey.get(key)
      if (prepared === undefined) {
        prepared = prepare(text(key))
        byKey.set(key, prepared)
      }
      return prepared
    }
  }
  const claimEligibleStatement = memo(claimEligibleSql)
  const LIST_STATES = ["all", "pending", "eligible", "resolved"] as const
  // limit × state × session filter × run filter, as one number (the limit is a checked integer).
  const listStatement = memo((key: number) =>
    listSql((key & 2) !== 0, (key & 1) !== 0, LIST_STATES[(key >> 2) & 3] ?? "all", Math.floor(key / 16))
  )

  /**
   * Run a statement that returns intent rows, decode them and hand them to `finish`; failures
   * become StoreFailure. `known`: facts this call just validated and wrote (their row needs no
   * second decode). It steps the statement when called: call it only while the effect runs (in
   * a `checked` thunk or a continuation). On the free connection, the path every store call
   * takes, it costs no Effect step beyond the result's (docs/bench.md).
   */
  const intentRows = <A>(
    operation: string,
    prepared: PreparedStatement,
    params: ReadonlyArray<unknown>,
    known: KnownFacts | undefined,
    finish: (found: ReadonlyArray<TurnIntent>) => A
  ): Effect.Effect<A, StoreFailure> => {
    const now = prepared.valuesNow?.(params)
    if (now !== undefined) {
      if (now instanceof SqlError.SqlError) return Effect.fail(storeFailure(operation)(now))
      const found = valuesToIntents(operation, now, known)
      return found instanceof StoreFailure ? Effect.fail(found) : Effect.succeed(finish(found))
    }
    const decoded = (found: TurnIntent[] | StoreFailure) =>
      found instanceof StoreFailure ? Effect.fail(found) : Effect.succeed(finish(found))
    return prepared.values === undefined
      ? Effect.flatMap(Effect.mapError(prepared.all(params), storeFailure(operation)), (found) =>
          decoded(toIntents(operation, found))
        )
      : Effect.flatMap(Effect.mapError(prepared.values(params), storeFailure(operation)), (found) =>
          decoded(valuesToIntents(operation, found, known))
        )
  }

  const rows = (
    operation: string,
    prepared: PreparedStatement,
    params: ReadonlyArray<unknown>,
    known?: KnownFacts
  ): Effect.Effect<ReadonlyArray<TurnIntent>, StoreFailure> =>
    Effect.suspend(() => intentRows(operation, prepared, params, known, all))

  /** One intent by ID; like `intentRows`, call it only while the effect runs. */
  const selectNow = (operation: string, id: string): Effect.Effect<Option.Option<TurnIntent>, StoreFailure> =>
    intentRows(operation, statement.select, [id], undefined, first)

  const select = (operation: string, id: string): Effect.Effect<Option.Option<TurnIntent>, StoreFailure> =>
    Effect.suspend(() => selectNow(operation, id))

  const markEligible = (operation: string, id: string, facts: KnownFacts | undefined) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      rows(operation, statement.markEligible, [iso(now), facts?.json ?? null, id], facts)
    )

  /** The intent already existed: same immutable fields, or an IdentityCollision. */
  const ensureExisting = (input: EnsureIntent, id: string) =>
    Effect.gen(function* () {
      const found = yield* select("ensure", id)
      if (Option.isNone(found))
        return yield* new StoreFailure({ operation: "ensure", message: "row vanished" })
      const existing = found.value
      const differs = IMMUTABLE_FIELDS.filter((field) => existing[field] !== input[field])
      if (differs.length > 0) return yield* new IdentityCollision({ intentId: id, fields: differs })
      if (input.eligible === true && existing.resolvedAt === null && existing.eligibleAt === null) {
        const updated = yield* markEligible("ensure", id, undefined)
        return updated[0] ?? existing
      }
      return existing
    })

  const ensure: TurnIntentStoreService["ensure"] = (input) =>
    Effect.flatMap(validateFactsJson(input.facts), (facts) =>
      checked(
        () => invalidId("workflowRef", input.workflowRef) ?? invalidCause(input.cause),
        () =>
          Effect.flatMap(deriveIntentId(input), (id) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const requestedAt = iso(now)
              const params = [
                id,
                input.sourceEventId,
                input.runId,
                input.workflowRef,
                input.targetSessionId,
                input.cause,
                input.nodeId,
                input.attemptId,
                facts.json,
                requestedAt,
                input.eligible === true ? requestedAt : null
              ]
              return Effect.flatMap(rows("ensure", statement.insert, params, facts), (inserted) =>
                inserted[0] !== undefined ? Effect.succeed(inserted[0]) : ensureExisting(input, id)
              )
            })
          )
      )
    )

  const get: TurnIntentStoreService["get"] = (id) =>
    checked(
      () => invalidId("intentId", id),
      () => selectNow("get", id)
    )

  const claimForRun: TurnIntentStoreService["claimForRun"] = (input) =>
    checked(
      () =>
        invalidId("runId", input.runId) ??
        invalidId("targetSessionId", input.targetSessionId) ??
        invalidClaim(input),
      () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          intentRows(
            "claimForRun",
            statement.claimForRun,
            [input.token, now + input.leaseMs, input.runId, input.targetSessionId, now, input.token],
            undefined,
            first
          )
        )
    )

  const claimEligibleForSession: TurnIntentStoreService["claimEligibleForSession"] = (input) =>
    checked(
      () =>
        invalidId("targetSessionId", input.targetSessionId) ??
        invalidClaim(input) ??
        invalidInteger("limit", input.limit, 1, MAX_LIST_LIMIT),
      () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          statement.probeEligible.all([input.targetSessionId, now, input.token]).pipe(
            asStoreFailure("claimEligibleForSession"),
            Effect.flatMap((found) =>
              found.length === 0
                ? Effect.succeed([])
                : intentRows(
                    "claimEligibleForSession",
                    claimEligibleStatement(input.limit),
                    [input.token, now + input.leaseMs, input.targetSessionId, now, input.token],
                    undefined,
                    inEligibilityOrder
                  )
            )
          )
        )
    )

  const makeEligible: TurnIntentStoreService["makeEligible"] = (input) =>
    checked(
      () => invalidId("intentId", input.intentId),
      () => {
        // Plain combinators, no generator: this is a hot path (docs/bench.md).
        const mark = (facts: KnownFacts | undefined) =>
          Effect.flatMap(markEligible("makeEligible", input.intentId, facts), (updated) => {
            const row = updated[0]
            if (row !== undefined) return Effect.succeed(row)
            // Nothing updated: resolved already (returned as it is), or no such intent.
            return Effect.flatMap(select("makeEligible", input.intentId), (existing) =>
              Option.isNone(existing)
                ? Effect.fail(new IntentNotFound({ intentId: input.intentId }))
                : Effect.succeed(existing.value)
            )
          })
        return input.facts === undefined
          ? mark(undefined)
          : Effect.flatMap(validateFactsJson(input.facts), mark)
      }
    )

  /** Why a resolve matched nothing: the row as it is now tells. */
  const notResolved = (input: { readonly intentId: string; readonly token: string }) =>
    Effect.flatMap(
      select("resolve", input.intentId),
      (existing): Effect.Effect<never, ClaimNotHeld | IntentNotFound> => {
        if (Option.isNone(existing)) return Effect.fail(new IntentNotFound({ intentId: input.intentId }))
        const row = existing.value
        const reason =
          row.resolvedAt !== null
            ? "resolved"
            : row.deliveryClaimToken === null
              ? "notClaimed"
              : row.deliveryClaimToken !== input.token
                ? "otherClaimant"
                : "expired"
        return Effect.fail(new ClaimNotHeld({ intentId: input.intentId, reason }))
      }
    )

  const resolve: TurnIntentStoreService["resolve"] = (input) =>
    checked(
      () =>
        invalidId("intentId", input.intentId) ??
        invalidId("token", input.token) ??
        invalidId("messageId", input.messageId) ??
        invalidResolution(input.resolution),
      () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.flatMap(
            rows("resolve", statement.resolve, [
              iso(now),
              input.resolution,
              input.messageId,
              input.intentId,
              input.token,
              now
            ]),
            (resolved): Effect.Effect<TurnIntent, ClaimNotHeld | IntentNotFound | StoreFailure> =>
              resolved[0] !== undefined ? Effect.succeed(resolved[0]) : notResolved(input)
          )
        )
    )

  const release: TurnIntentStoreService["release"] = (input) =>
    checked(
      () => invalidId("intentId", input.intentId) ?? invalidId("token", input.token),
      () =>
        statement.release.all([input.intentId, input.token]).pipe(
          Effect.map((released) => released.length > 0),
          asStoreFailure("release")
        )
    )

  const renew: TurnIntentStoreService["renew"] = (input) =>
    checked(
      () => invalidId("intentId", input.intentId) ?? invalidClaim(input),
      () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          statement.renew.all([now + input.leaseMs, input.intentId, input.token]).pipe(
            Effect.map((renewed) => renewed.length > 0),
            asStoreFailure("renew")
          )
        )
    )

  const list: TurnIntentStoreService["list"] = (query) =>
    checked(
      () =>
        invalidInteger("limit", query.limit, 1, MAX_LIST_LIMIT) ??
        (query.targetSessionId === undefined
          ? undefined
          : invalidId("targetSessionId", query.targetSessionId)) ??
        (query.runId === undefined ? undefined : invalidId("runId", query.runId)) ??
        invalidState(query.state),
      () => {
        const params: Array<unknown> = []
        if (query.targetSessionId !== undefined) params.push(query.targetSessionId)
        if (query.runId !== undefined) params.push(query.runId)
        const key =
          query.limit * 16 +
          LIST_STATES.indexOf(query.state ?? "all") * 4 +
          (query.targetSessionId !== undefined ? 2 : 0) +
          (query.runId !== undefined ? 1 : 0)
        return intentRows("list", listStatement(key), params, undefined, all)
      }
    )

  return TurnIntentStore.of({
    ensure,
    get,
    claimForRun,
    claimEligibleForSession,
    makeEligible,
    resolve,
    renew,
    release,
    list
  })
})

/** The store over an already-provided Database + SqlClient. */
export const layer: Layer.Layer<TurnIntentStore, never, Database | SqlClient.SqlClient> = Layer.effect(
  TurnIntentStore,
  make
)

/** The store and its database on one SQLite file. */
export const layerSqlite = (
  options: DatabaseOptions
): Layer.Layer<TurnIntentStore | Database | SqlClient.SqlClient, OpenError> =>
  layer.pipe(Layer.provideMerge(Database.layer(options)))
