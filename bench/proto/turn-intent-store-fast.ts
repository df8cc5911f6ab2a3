/**
 * PROTOTYPE (bench only) of proposed changes to src/store/turn-intent-store-sqlite.ts, same SQL
 * and same contract, measured against the current store in bench/store.ts:
 * 1. statements prepared once on the shared connection (database-fast.ts), no @effect/sql
 *    statement path per query;
 * 2. rows decoded by column checks (the STRICT table and its CHECKs already fix every column's
 *    type and value set) and the facts JSON by Schema, without re-serialising it to measure its
 *    size (the column's CHECK bounds the stored text to the same 64 KiB);
 * 3. argument checks as plain functions, one `Effect.suspend` per call instead of a generator.
 */
import type { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Option, ParseResult, Schema } from "effect"
import {
  ClaimNotHeld,
  IdentityCollision,
  IntentNotFound,
  InvalidInput,
  StoreFailure
} from "../../src/domain/errors.ts"
import { FallbackFacts } from "../../src/domain/facts.ts"
import {
  type Cause,
  IMMUTABLE_FIELDS,
  MAX_ID_LENGTH,
  type Resolution,
  type TurnIntent
} from "../../src/domain/turn-intent.ts"
import type { Database, OpenError } from "../../src/store/database.ts"
import {
  type Claim,
  type EnsureIntent,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  TurnIntentStore,
  type TurnIntentStoreService
} from "../../src/store/turn-intent-store.ts"
import { SQL } from "../sql.ts"
import { intentIdFast, validateFactsFast } from "./domain-fast.ts"
import {
  FastDatabase,
  type FastDatabaseOptions,
  layer as fastDatabaseLayer,
  type Prepared
} from "./database-fast.ts"

const CAUSES: ReadonlySet<string> = new Set<Cause>([
  "agentCancelled",
  "timedOut",
  "failed",
  "launchFailed",
  "controllerInterrupted",
  "claimLost"
])
const RESOLUTIONS: ReadonlySet<string> = new Set<Resolution>(["workflowPrompt", "presentation", "fallback"])

// Strict like src: unknown keys are a store fault. Checking the key set by hand is ~3 µs cheaper
// per row than Schema's onExcessProperty: "error" here (bench/breakdown.ts).
const decodeFactsFields = Schema.decodeUnknownEither(FallbackFacts.from)
const FACT_KEYS: ReadonlySet<string> = new Set(Object.keys(FallbackFacts.from.fields))
const COLUMNS = 16

class BadRow extends Error {}

const text = (row: Record<string, unknown>, column: string): string => {
  const value = row[column]
  if (typeof value !== "string") throw new BadRow(`${column} is not text`)
  return value
}
const textOrNull = (row: Record<string, unknown>, column: string): string | null =>
  row[column] === null ? null : text(row, column)
const member = <A extends string>(
  row: Record<string, unknown>,
  column: string,
  set: ReadonlySet<string>
): A => {
  const value = text(row, column)
  if (!set.has(value)) throw new BadRow(`${column} has unknown value ${value}`)
  return value as A
}

/** One stored row to a TurnIntent; anything unexpected is a StoreFailure, never a bad intent. */
export const toIntent = (operation: string, row: unknown): TurnIntent => {
  try {
    if (typeof row !== "object" || row === null) throw new BadRow("not a row")
    const r = row as Record<string, unknown>
    if (Object.keys(r).length !== COLUMNS) throw new BadRow("unexpected columns")
    const json: unknown = JSON.parse(text(r, "fallback_facts_json"))
    if (typeof json !== "object" || json === null) throw new BadRow("facts are not an object")
    for (const key of Object.keys(json))
      if (!FACT_KEYS.has(key)) throw new BadRow(`unknown facts field ${key}`)
    const facts = decodeFactsFields(json)
    if (facts._tag === "Left") throw new BadRow(ParseResult.TreeFormatter.formatErrorSync(facts.left))
    const expires = r.delivery_claim_expires_at
    if (expires !== null && typeof expires !== "number") throw new BadRow("delivery_claim_expires_at")
    return {
      intentId: text(r, "intent_id"),
      sourceEventId: text(r, "source_event_id"),
      runId: text(r, "run_id"),
      workflowRef: text(r, "workflow_ref"),
      targetSessionId: text(r, "target_session_id"),
      cause: member<Cause>(r, "cause", CAUSES),
      nodeId: textOrNull(r, "node_id"),
      attemptId: textOrNull(r, "attempt_id"),
      facts: facts.right,
      requestedAt: text(r, "requested_at"),
      eligibleAt: textOrNull(r, "eligible_at"),
      resolvedAt: textOrNull(r, "resolved_at"),
      resolution: r.resolution === null ? null : member<Resolution>(r, "resolution", RESOLUTIONS),
      resolutionMessageId: textOrNull(r, "resolution_message_id"),
      deliveryClaimToken: textOrNull(r, "delivery_claim_token"),
      deliveryClaimExpiresAt: expires
    }
  } catch (error) {
    throw new StoreFailure({ operation, message: `stored row does not decode: ${String(error)}` })
  }
}

const invalidId = (field: string, value: string): InvalidInput | undefined =>
  value.length === 0
    ? new InvalidInput({ field, message: `${field} must be a non-empty string` })
    : value.length > MAX_ID_LENGTH
      ? new InvalidInput({ field, message: `${field} must be at most ${MAX_ID_LENGTH} characters` })
      : undefined

const invalidInteger = (field: string, value: number, min: number, max: number): InvalidInput | undefined =>
  Number.isSafeInteger(value) && value >= min && value <= max
    ? undefined
    : new InvalidInput({ field, message: `${field} must be an integer from ${min} to ${max}` })

const invalidClaim = (claim: Claim) =>
  invalidId("token", claim.token) ?? invalidInteger("leaseMs", claim.leaseMs, 1, MAX_LEASE_MS)

const iso = (millis: number) => new Date(millis).toISOString()

/** SQLite compares TEXT with BINARY collation; sort results the same way, not by locale. */
const ordinal = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Run the checks when the effect runs; the first failing one is the error. */
const checked = <A, E>(
  check: () => InvalidInput | undefined,
  run: () => Effect.Effect<A, E>
): Effect.Effect<A, E | InvalidInput> =>
  Effect.suspend((): Effect.Effect<A, E | InvalidInput> => {
    const bad = check()
    return bad === undefined ? run() : Effect.fail(bad)
  })

export const make = Effect.gen(function* () {
  const db = yield* FastDatabase
  // The very SQL of the raw floor (bench/sql.ts), which the bench checks against what src sends.
  const statement = {
    insert: db.prepare(SQL.ensure),
    select: db.prepare("SELECT * FROM workflow_turn_intents WHERE intent_id = ?"),
    markEligible: db.prepare(SQL.makeEligible),
    claimForRun: db.prepare(SQL.claimForRun),
    claimEligible: db.prepare(SQL.claimEligibleForSession),
    resolve: db.prepare(SQL.resolve),
    release: db.prepare(SQL.release)
  }
  // list has at most 12 shapes (filters present × state); each is prepared on first use.
  const listStatements = new Map<string, Prepared>()

  /** Run a statement returning intent rows and decode them; failures become StoreFailure. */
  const rows = (
    operation: string,
    prepared: Prepared,
    params: ReadonlyArray<unknown>
  ): Effect.Effect<ReadonlyArray<TurnIntent>, StoreFailure> =>
    prepared.all(params).pipe(
      Effect.mapError(
        (error) =>
          new StoreFailure({ operation, message: String(error.cause ?? error.message), cause: error })
      ),
      Effect.flatMap((found) =>
        Effect.try({
          try: () => found.map((row) => toIntent(operation, row)),
          catch: (error) =>
            error instanceof StoreFailure ? error : new StoreFailure({ operation, message: String(error) })
        })
      )
    )

  const select = (operation: string, id: string) =>
    Effect.map(rows(operation, statement.select, [id]), (found) => Option.fromNullable(found[0]))

  const markEligible = (operation: string, id: string, factsJson: string | null) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      rows(operation, statement.markEligible, [iso(now), factsJson, id])
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
        const updated = yield* markEligible("ensure", id, null)
        return updated[0] ?? existing
      }
      return existing
    })

  const ensure: TurnIntentStoreService["ensure"] = (input) =>
    Effect.flatMap(validateFactsFast(input.facts), (facts) =>
      checked(
        () =>
          invalidId("workflowRef", input.workflowRef) ??
          (CAUSES.has(input.cause)
            ? undefined
            : new InvalidInput({
                field: "cause",
                message:
                  "cause must be agentCancelled, timedOut, failed, launchFailed, controllerInterrupted or claimLost"
              })),
        () =>
          Effect.flatMap(intentIdFast(input), (id) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const requestedAt = iso(now)
              return Effect.flatMap(
                rows("ensure", statement.insert, [
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
                ]),
                (inserted) =>
                  inserted[0] !== undefined ? Effect.succeed(inserted[0]) : ensureExisting(input, id)
              )
            })
          )
      )
    )

  const get: TurnIntentStoreService["get"] = (id) =>
    checked(
      () => invalidId("intentId", id),
      () => select("get", id)
    )

  const claimForRun: TurnIntentStoreService["claimForRun"] = (input) =>
    checked(
      () =>
        invalidId("runId", input.runId) ??
        invalidId("targetSessionId", input.targetSessionId) ??
        invalidClaim(input),
      () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.map(
            rows("claimForRun", statement.claimForRun, [
              input.token,
              now + input.leaseMs,
              input.runId,
              input.targetSessionId,
              now,
              input.token
            ]),
            (claimed) => Option.fromNullable(claimed[0])
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
          Effect.map(
            rows("claimEligibleForSession", statement.claimEligible, [
              input.token,
              now + input.leaseMs,
              input.targetSessionId,
              now,
              input.token,
              input.limit
            ]),
            // RETURNING order is unspecified; callers rely on eligibility order.
            (claimed) =>
              claimed.length < 2
                ? claimed
                : [...claimed].sort(
                    (a, b) =>
                      ordinal(a.eligibleAt ?? "", b.eligibleAt ?? "") || ordinal(a.intentId, b.intentId)
                  )
          )
        )
    )

  const makeEligible: TurnIntentStoreService["makeEligible"] = (input) =>
    Effect.gen(function* () {
      const bad = invalidId("intentId", input.intentId)
      if (bad !== undefined) return yield* bad
      const factsJson = input.facts === undefined ? null : (yield* validateFactsFast(input.facts)).json
      const updated = yield* markEligible("makeEligible", input.intentId, factsJson)
      if (updated[0] !== undefined) return updated[0]
      const existing = yield* select("makeEligible", input.intentId)
      if (Option.isNone(existing)) return yield* new IntentNotFound({ intentId: input.intentId })
      return existing.value
    })

  const resolve: TurnIntentStoreService["resolve"] = (input) =>
    Effect.gen(function* () {
      const bad =
        invalidId("intentId", input.intentId) ??
        invalidId("token", input.token) ??
        invalidId("messageId", input.messageId) ??
        (RESOLUTIONS.has(input.resolution)
          ? undefined
          : new InvalidInput({
              field: "resolution",
              message: "resolution must be workflowPrompt, presentation or fallback"
            }))
      if (bad !== undefined) return yield* bad
      const now = yield* Clock.currentTimeMillis
      const resolved = yield* rows("resolve", statement.resolve, [
        iso(now),
        input.resolution,
        input.messageId,
        input.intentId,
        input.token,
        now
      ])
      if (resolved[0] !== undefined) return resolved[0]
      const existing = yield* select("resolve", input.intentId)
      if (Option.isNone(existing)) return yield* new IntentNotFound({ intentId: input.intentId })
      const row = existing.value
      const reason =
        row.resolvedAt !== null
          ? "resolved"
          : row.deliveryClaimToken === null
            ? "notClaimed"
            : row.deliveryClaimToken !== input.token
              ? "otherClaimant"
              : "expired"
      return yield* new ClaimNotHeld({ intentId: input.intentId, reason })
    })

  const release: TurnIntentStoreService["release"] = (input) =>
    checked(
      () => invalidId("intentId", input.intentId) ?? invalidId("token", input.token),
      () =>
        statement.release.all([input.intentId, input.token]).pipe(
          Effect.map((released) => released.length > 0),
          Effect.mapError(
            (error) =>
              new StoreFailure({
                operation: "release",
                message: String(error.cause ?? error.message),
                cause: error
              })
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
        (["pending", "resolved", "all", undefined].includes(query.state)
          ? undefined
          : new InvalidInput({ field: "state", message: "state must be pending, resolved or all" })),
      () => {
        const where: Array<string> = []
        const params: Array<unknown> = []
        if (query.targetSessionId !== undefined) {
          where.push("target_session_id = ?")
          params.push(query.targetSessionId)
        }
        if (query.runId !== undefined) {
          where.push("run_id = ?")
          params.push(query.runId)
        }
        if (query.state === "pending") where.push("resolved_at IS NULL")
        else if (query.state === "resolved") where.push("resolved_at IS NOT NULL")
        params.push(query.limit)
        const sqlText = `SELECT * FROM workflow_turn_intents WHERE ${where.length === 0 ? "1=1" : `(${where.join(" AND ")})`}
          ORDER BY requested_at, intent_id LIMIT ?`
        let prepared = listStatements.get(sqlText)
        if (prepared === undefined) {
          prepared = db.prepare(sqlText)
          listStatements.set(sqlText, prepared)
        }
        return rows("list", prepared, params)
      }
    )

  return TurnIntentStore.of({
    ensure,
    get,
    claimForRun,
    claimEligibleForSession,
    makeEligible,
    resolve,
    release,
    list
  })
})

/** The prototype store and its database on one SQLite file. */
export const layerSqlite = (
  options: FastDatabaseOptions
): Layer.Layer<TurnIntentStore | FastDatabase | Database | SqlClient.SqlClient, OpenError> =>
  Layer.effect(TurnIntentStore, make).pipe(Layer.provideMerge(fastDatabaseLayer(options)))
