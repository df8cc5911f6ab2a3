/**
 * TurnIntentStore on the controller database (SQLite, and PostgreSQL through the same
 * SqlClient). Every state change is one conditional statement (`UPDATE … WHERE <state still
 * allows it> RETURNING *`), so two claimants in two processes can never both win, and no
 * read-then-write window exists to lose a race in. Rows are decoded with Schema
 * (`turn-intent-rows.ts`); every statement waits for another connection's lock within the
 * fiber's budget (`Database.lockWait`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Clock, Effect, Layer, Option } from "effect"
import { ClaimNotHeld, IdentityCollision, IntentNotFound } from "../domain/errors.ts"
import { validateFactsJson } from "../domain/facts.ts"
import { intentId as deriveIntentId, invalidId } from "../domain/identity.ts"
import { IMMUTABLE_FIELDS, type TurnIntent } from "../domain/turn-intent.ts"
import { Database, type DatabaseOptions, type OpenError, waitingForLocks } from "./database.ts"
import { StoreFailure, storeFailure } from "./store-errors.ts"
import {
  invalidCause,
  invalidClaim,
  invalidInteger,
  invalidResolution,
  invalidState,
  valid
} from "./turn-intent-input.ts"
import { decodeIntents } from "./turn-intent-rows.ts"
import {
  type EnsureIntent,
  MAX_LIST_LIMIT,
  TurnIntentStore,
  type TurnIntentStoreService
} from "./turn-intent-store.ts"

const iso = (millis: number) => new Date(millis).toISOString()

/** SQLite compares TEXT with BINARY collation; sort results the same way, not by locale. */
const ordinal = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const byEligibility = (a: TurnIntent, b: TurnIntent) =>
  ordinal(a.eligibleAt ?? "", b.eligibleAt ?? "") || ordinal(a.intentId, b.intentId)

// RETURNING order is unspecified; callers rely on eligibility order.
const inEligibilityOrder = (claimed: ReadonlyArray<TurnIntent>) =>
  claimed.length < 2 ? claimed : [...claimed].sort(byEligibility)

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const lockWait = waitingForLocks(yield* Database)

  /**
   * A row limit is part of the text (`LIMIT 10`), never a bound parameter: on SQLite 3.53 a
   * rebound `LIMIT ?` costs ~13 µs per call (the planner re-plans), a constant one nothing. The
   * limit is a validated integer (1…MAX_LIST_LIMIT).
   */
  const limit = (n: number) => sql.literal(String(Math.trunc(n)))

  /**
   * A claim picks its rows in a subquery. Under PostgreSQL's READ COMMITTED, two claimants may
   * pick the same rows from their snapshots, and the second one's UPDATE, after waiting for the
   * first one's row lock, re-checks only `intent_id IN (…)` and claims them again. Locking the
   * picked rows there (`FOR UPDATE SKIP LOCKED`) makes each claimant take rows no one else is
   * taking, and the lock re-checks the row's current version against the claim's conditions.
   * SQLite has one writer at a time: nothing to add.
   */
  const lockPicked = sql.onDialectOrElse({
    pg: () => sql.literal(" FOR UPDATE SKIP LOCKED"),
    orElse: () => sql.literal("")
  })

  /** Run one statement (lock wait included); its failure is this operation's StoreFailure. */
  const run = (
    operation: string,
    statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
  ): Effect.Effect<ReadonlyArray<unknown>, StoreFailure> =>
    Effect.mapError(lockWait(statement), storeFailure(operation))

  /** Run a statement that returns intent rows, decoded. */
  const intents = (
    operation: string,
    statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
  ): Effect.Effect<ReadonlyArray<TurnIntent>, StoreFailure> =>
    Effect.flatMap(run(operation, statement), decodeIntents(operation))

  const first = (found: ReadonlyArray<TurnIntent>) => Option.fromNullable(found[0])

  const select = (operation: string, id: string) =>
    Effect.map(intents(operation, sql`SELECT * FROM workflow_turn_intents WHERE intent_id = ${id}`), first)

  const markEligible = (operation: string, id: string, factsJson: string | null) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      intents(
        operation,
        sql`UPDATE workflow_turn_intents
    SET eligible_at = coalesce(eligible_at, ${iso(now)}),
        fallback_facts_json = coalesce(${factsJson}, fallback_facts_json)
    WHERE intent_id = ${id} AND resolved_at IS NULL
    RETURNING *`
      )
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

  const ensure: TurnIntentStoreService["ensure"] = Effect.fn("TurnIntentStore.ensure")(function* (input) {
    const facts = yield* validateFactsJson(input.facts)
    yield* valid(invalidId("workflowRef", input.workflowRef) ?? invalidCause(input.cause))
    const id = yield* deriveIntentId(input)
    const requestedAt = iso(yield* Clock.currentTimeMillis)
    const inserted = yield* intents(
      "ensure",
      sql`INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, workflow_ref,
      target_session_id, cause, node_id, attempt_id, fallback_facts_json, requested_at, eligible_at)
    VALUES (${id}, ${input.sourceEventId}, ${input.runId}, ${input.workflowRef}, ${input.targetSessionId},
      ${input.cause}, ${input.nodeId}, ${input.attemptId}, ${facts.json}, ${requestedAt},
      ${input.eligible === true ? requestedAt : null})
    ON CONFLICT (intent_id) DO NOTHING
    RETURNING *`
    )
    return inserted[0] ?? (yield* ensureExisting(input, id))
  })

  const get: TurnIntentStoreService["get"] = Effect.fn("TurnIntentStore.get")(function* (id) {
    yield* valid(invalidId("intentId", id))
    return yield* select("get", id)
  })

  const claimForRun: TurnIntentStoreService["claimForRun"] = Effect.fn("TurnIntentStore.claimForRun")(
    function* (input) {
      yield* valid(
        invalidId("runId", input.runId) ??
          invalidId("targetSessionId", input.targetSessionId) ??
          invalidClaim(input)
      )
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* intents(
        "claimForRun",
        sql`UPDATE workflow_turn_intents
    SET delivery_claim_token = ${input.token}, delivery_claim_expires_at = ${now + input.leaseMs}
    WHERE intent_id = (
      SELECT intent_id FROM workflow_turn_intents
      WHERE run_id = ${input.runId} AND target_session_id = ${input.targetSessionId}
        AND resolved_at IS NULL
        AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ${now}
          OR delivery_claim_token = ${input.token})
      ORDER BY requested_at, intent_id LIMIT 1${lockPicked})
    RETURNING *`
      )
      return first(claimed)
    }
  )

  const claimEligibleForSession: TurnIntentStoreService["claimEligibleForSession"] = Effect.fn(
    "TurnIntentStore.claimEligibleForSession"
  )(function* (input) {
    yield* valid(
      invalidId("targetSessionId", input.targetSessionId) ??
        invalidClaim(input) ??
        invalidInteger("limit", input.limit, 1, MAX_LIST_LIMIT)
    )
    const now = yield* Clock.currentTimeMillis
    // An UPDATE that matches nothing still takes the file's write lock and commits; most sync
    // passes find nothing, so they first ask the same partial index, read-only. Safe without a
    // transaction: an intent that becomes claimable right after the probe is the next pass's, as
    // if this pass had run a moment earlier; the UPDATE stays conditional.
    const probe = yield* run(
      "claimEligibleForSession",
      sql`SELECT 1 FROM workflow_turn_intents
    WHERE target_session_id = ${input.targetSessionId} AND resolved_at IS NULL AND eligible_at IS NOT NULL
      AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ${now} OR delivery_claim_token = ${input.token})
    LIMIT 1`
    )
    if (probe.length === 0) return []
    const claimed = yield* intents(
      "claimEligibleForSession",
      sql`UPDATE workflow_turn_intents
    SET delivery_claim_token = ${input.token}, delivery_claim_expires_at = ${now + input.leaseMs}
    WHERE intent_id IN (
      SELECT intent_id FROM workflow_turn_intents
      WHERE target_session_id = ${input.targetSessionId}
        AND resolved_at IS NULL AND eligible_at IS NOT NULL
        AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ${now}
          OR delivery_claim_token = ${input.token})
      ORDER BY eligible_at, intent_id LIMIT ${limit(input.limit)}${lockPicked})
    RETURNING *`
    )
    return inEligibilityOrder(claimed)
  })

  const makeEligible: TurnIntentStoreService["makeEligible"] = Effect.fn("TurnIntentStore.makeEligible")(
    function* (input) {
      yield* valid(invalidId("intentId", input.intentId))
      const facts = input.facts === undefined ? undefined : yield* validateFactsJson(input.facts)
      const updated = yield* markEligible("makeEligible", input.intentId, facts?.json ?? null)
      if (updated[0] !== undefined) return updated[0]
      // Nothing updated: resolved already (returned as it is), or no such intent.
      const existing = yield* select("makeEligible", input.intentId)
      if (Option.isNone(existing)) return yield* new IntentNotFound({ intentId: input.intentId })
      return existing.value
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

  const resolve: TurnIntentStoreService["resolve"] = Effect.fn("TurnIntentStore.resolve")(function* (input) {
    yield* valid(
      invalidId("intentId", input.intentId) ??
        invalidId("token", input.token) ??
        invalidId("messageId", input.messageId) ??
        invalidResolution(input.resolution)
    )
    const now = yield* Clock.currentTimeMillis
    const resolved = yield* intents(
      "resolve",
      sql`UPDATE workflow_turn_intents
    SET resolved_at = ${iso(now)}, resolution = ${input.resolution},
        resolution_message_id = ${input.messageId}
    WHERE intent_id = ${input.intentId} AND resolved_at IS NULL
      AND delivery_claim_token = ${input.token} AND delivery_claim_expires_at > ${now}
    RETURNING *`
    )
    return resolved[0] ?? (yield* notResolved(input))
  })

  const release: TurnIntentStoreService["release"] = Effect.fn("TurnIntentStore.release")(function* (input) {
    yield* valid(invalidId("intentId", input.intentId) ?? invalidId("token", input.token))
    const released = yield* run(
      "release",
      sql`UPDATE workflow_turn_intents
    SET delivery_claim_token = NULL, delivery_claim_expires_at = NULL
    WHERE intent_id = ${input.intentId} AND delivery_claim_token = ${input.token}
      AND resolved_at IS NULL
    RETURNING intent_id`
    )
    return released.length > 0
  })

  // Extends the caller's own claim; like a claim by the same token, it also takes back a claim
  // whose lease ran out while no one else claimed it (the token would differ then).
  const renew: TurnIntentStoreService["renew"] = Effect.fn("TurnIntentStore.renew")(function* (input) {
    yield* valid(invalidId("intentId", input.intentId) ?? invalidClaim(input))
    const now = yield* Clock.currentTimeMillis
    const renewed = yield* run(
      "renew",
      sql`UPDATE workflow_turn_intents
    SET delivery_claim_expires_at = ${now + input.leaseMs}
    WHERE intent_id = ${input.intentId} AND delivery_claim_token = ${input.token}
      AND resolved_at IS NULL
    RETURNING intent_id`
    )
    return renewed.length > 0
  })

  const list: TurnIntentStoreService["list"] = Effect.fn("TurnIntentStore.list")(function* (query) {
    yield* valid(
      invalidInteger("limit", query.limit, 1, MAX_LIST_LIMIT) ??
        (query.targetSessionId === undefined
          ? undefined
          : invalidId("targetSessionId", query.targetSessionId)) ??
        (query.runId === undefined ? undefined : invalidId("runId", query.runId)) ??
        invalidState(query.state)
    )
    const state = query.state ?? "all"
    const where = sql.and([
      ...(query.targetSessionId === undefined ? [] : [sql`target_session_id = ${query.targetSessionId}`]),
      ...(query.runId === undefined ? [] : [sql`run_id = ${query.runId}`]),
      ...(state === "pending" || state === "eligible" ? [sql`resolved_at IS NULL`] : []),
      ...(state === "eligible" ? [sql`eligible_at IS NOT NULL`] : []),
      ...(state === "resolved" ? [sql`resolved_at IS NOT NULL`] : [])
    ])
    return yield* intents(
      "list",
      sql`SELECT * FROM workflow_turn_intents WHERE ${where}
    ORDER BY requested_at, intent_id LIMIT ${limit(query.limit)}`
    )
  })

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
