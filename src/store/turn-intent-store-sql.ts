/**
 * TurnIntentStore on the controller database (SQLite, or PostgreSQL through the same SqlClient).
 * Every state change is one conditional statement (`UPDATE … WHERE <state still allows it>
 * RETURNING *`), so two claimants in two processes can never both win and no read-then-write
 * window exists to lose a race in; each waits for another connection's lock within the fiber's
 * budget (`Database.lockWait`). Rows are decoded strictly before anyone sees them: exactly the
 * table's columns, each of its type and value set, the facts JSON as strictly as everywhere.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Clock, Effect, Layer, Option, ParseResult, Schema } from "effect"
import { ClaimNotHeld, IdentityCollision, IntentNotFound } from "../domain/errors.ts"
import { encodeFactsJson, FallbackFacts, parseStoredFacts, validateFactsJson } from "../domain/facts.ts"
import { intentId as deriveIntentId, invalidId } from "../domain/identity.ts"
import { Cause, IMMUTABLE_FIELDS, Resolution, type TurnIntent } from "../domain/turn-intent.ts"
import { Database, type DatabaseOptions, type OpenError, waitingForLocks } from "./database.ts"
import { TURN_INTENT_COLUMNS } from "./schema.ts"
import { StoreFailure, storeFailure } from "./store-errors.ts"
import {
  type EnsureIntent,
  invalidCause,
  invalidClaim,
  invalidInteger,
  invalidResolution,
  invalidState,
  MAX_LIST_LIMIT,
  TurnIntentStore,
  type TurnIntentStoreService,
  valid
} from "./turn-intent-store.ts"

/** Facts text as stored: decoded by `parseStoredFacts` (its reason is the message). */
const StoredFacts = Schema.transformOrFail(Schema.String, Schema.typeSchema(FallbackFacts), {
  strict: true,
  decode: (text, _options, ast) => {
    const facts = parseStoredFacts(text)
    return typeof facts === "string"
      ? ParseResult.fail(new ParseResult.Type(ast, text, `fallback_facts_json: ${facts}`))
      : ParseResult.succeed(facts)
  },
  encode: (facts) => ParseResult.succeed(encodeFactsJson(facts))
})

const Text = Schema.String
const TextOrNull = Schema.NullOr(Schema.String)

/** One row of `workflow_turn_intents`, column by column. */
const TurnIntentRow = Schema.Struct({
  intent_id: Text,
  source_event_id: Text,
  run_id: Text,
  workflow_ref: Text,
  target_session_id: Text,
  cause: Cause,
  node_id: TextOrNull,
  attempt_id: TextOrNull,
  fallback_facts_json: StoredFacts,
  requested_at: Text,
  eligible_at: TextOrNull,
  resolved_at: TextOrNull,
  resolution: Schema.NullOr(Resolution),
  resolution_message_id: TextOrNull,
  delivery_claim_token: TextOrNull,
  delivery_claim_expires_at: Schema.NullOr(Schema.Number)
})

const toIntent = (row: typeof TurnIntentRow.Type): TurnIntent => ({
  intentId: row.intent_id,
  sourceEventId: row.source_event_id,
  runId: row.run_id,
  workflowRef: row.workflow_ref,
  targetSessionId: row.target_session_id,
  cause: row.cause,
  nodeId: row.node_id,
  attemptId: row.attempt_id,
  facts: row.fallback_facts_json,
  requestedAt: row.requested_at,
  eligibleAt: row.eligible_at,
  resolvedAt: row.resolved_at,
  resolution: row.resolution,
  resolutionMessageId: row.resolution_message_id,
  deliveryClaimToken: row.delivery_claim_token,
  deliveryClaimExpiresAt: row.delivery_claim_expires_at
})

// Every column the table has (`schema.ts`) is a field of the row.
const COLUMN_COUNT = (TURN_INTENT_COLUMNS satisfies ReadonlyArray<keyof typeof TurnIntentRow.fields>).length

/** Exactly the table's column count: with every column present (the Schema checks that), no other. */
const hasOnlyTableColumns = (rows: ReadonlyArray<unknown>): boolean =>
  rows.every((row) => typeof row === "object" && row !== null && Object.keys(row).length === COLUMN_COUNT)

// The strict decode (`onExcessProperty: "error"`) costs ~9 µs more per row (docs/bench.md): rows
// with the table's column count take the plain one, any other shape the strict one, which names
// the column that does not belong.
const decodeRows = Schema.decodeUnknown(Schema.Array(TurnIntentRow))
const decodeRowsStrictly = Schema.decodeUnknown(Schema.Array(TurnIntentRow), { onExcessProperty: "error" })

/** @internal Decode result rows; a row that does not decode is a store fault (StoreFailure), never data. */
export const decodeIntents =
  (operation: string) =>
  (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<TurnIntent>, StoreFailure> =>
    rows.length === 0
      ? Effect.succeed([])
      : Effect.mapBoth((hasOnlyTableColumns(rows) ? decodeRows : decodeRowsStrictly)(rows), {
          onFailure: (error) =>
            new StoreFailure({
              operation,
              message: `stored turn intent does not decode: ${error.message}`,
              cause: error
            }),
          onSuccess: (decoded) => decoded.map(toIntent)
        })

type Rows = Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>

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

  // A row limit is part of the text (`LIMIT 10`), never a bound parameter: on SQLite 3.53 a
  // rebound `LIMIT ?` costs ~13 µs per call (re-planned). It is validated (1…MAX_LIST_LIMIT).
  const limit = (n: number) => sql.literal(String(Math.trunc(n)))

  // A claim picks its rows in a subquery. Under PostgreSQL's READ COMMITTED two claimants may pick
  // the same rows, and the second UPDATE, after waiting for the first one's row lock, re-checks
  // only `intent_id IN (…)` and claims them again. `FOR UPDATE SKIP LOCKED` there makes each take
  // rows no one else is taking, re-checked against the claim's conditions. SQLite: one writer.
  const lockPicked = sql.onDialectOrElse({
    pg: () => sql.literal(" FOR UPDATE SKIP LOCKED"),
    orElse: () => sql.literal("")
  })

  /** Run one statement (lock wait included); its failure is this operation's StoreFailure. */
  const run = (operation: string, statement: Rows): Effect.Effect<ReadonlyArray<unknown>, StoreFailure> =>
    Effect.mapError(lockWait(statement), storeFailure(operation))

  /** Run a statement that returns intent rows, decoded. */
  const intents = (operation: string, statement: Rows) =>
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
