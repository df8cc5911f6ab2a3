/**
 * TurnIntentStore on the controller SQLite database. Every state change is one conditional
 * statement (`UPDATE … WHERE <state still allows it> RETURNING *`), so two claimants in two
 * processes can never both win, and no read-then-write window exists to lose a race in.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import {
  ClaimNotHeld,
  IdentityCollision,
  IntentNotFound,
  InvalidInput,
  StoreFailure
} from "../domain/errors.ts"
import { encodeFactsJson, FallbackFactsJson, validateFacts } from "../domain/facts.ts"
import { checkId, intentId as deriveIntentId } from "../domain/identity.ts"
import { Cause, IMMUTABLE_FIELDS, Resolution, type TurnIntent } from "../domain/turn-intent.ts"
import { Database, type DatabaseOptions, type OpenError } from "./database.ts"
import {
  type Claim,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  TurnIntentStore,
  type TurnIntentStoreService
} from "./turn-intent-store.ts"

/** A stored row, decoded strictly (the facts JSON included) before anyone sees it. */
const Row = Schema.Struct({
  intent_id: Schema.String,
  source_event_id: Schema.String,
  run_id: Schema.String,
  workflow_ref: Schema.String,
  target_session_id: Schema.String,
  cause: Cause,
  node_id: Schema.NullOr(Schema.String),
  attempt_id: Schema.NullOr(Schema.String),
  fallback_facts_json: FallbackFactsJson,
  requested_at: Schema.String,
  eligible_at: Schema.NullOr(Schema.String),
  resolved_at: Schema.NullOr(Schema.String),
  resolution: Schema.NullOr(Resolution),
  resolution_message_id: Schema.NullOr(Schema.String),
  delivery_claim_token: Schema.NullOr(Schema.String),
  delivery_claim_expires_at: Schema.NullOr(Schema.Number)
})
// Strict like every other facts decode: a stored row with unknown fields is a store fault, not data.
const decodeRows = Schema.decodeUnknown(Schema.Array(Row), { onExcessProperty: "error" })

const toIntent = (row: typeof Row.Type): TurnIntent => ({
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

const failure = (operation: string) => (error: SqlError.SqlError | { readonly message: string }) =>
  new StoreFailure({
    operation,
    message: String("cause" in error ? error.cause : error.message),
    cause: error
  })

const checkInteger = (field: string, value: number, min: number, max: number) =>
  Number.isSafeInteger(value) && value >= min && value <= max
    ? Effect.succeed(value)
    : Effect.fail(new InvalidInput({ field, message: `${field} must be an integer from ${min} to ${max}` }))

const checkClaim = (claim: Claim) =>
  Effect.zipRight(checkId("token", claim.token), checkInteger("leaseMs", claim.leaseMs, 1, MAX_LEASE_MS))

const iso = (millis: number) => new Date(millis).toISOString()

/** SQLite compares TEXT with BINARY collation; sort results the same way, not by locale. */
const ordinal = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

// Callers are typed, but the value crosses into a CHECK constraint: reject it as input first.
const checkCause = (cause: unknown) =>
  Schema.decodeUnknown(Cause)(cause).pipe(
    Effect.mapError(
      () =>
        new InvalidInput({
          field: "cause",
          message:
            "cause must be agentCancelled, timedOut, failed, launchFailed, controllerInterrupted or claimLost"
        })
    )
  )

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* Database

  /** Run a statement that returns intent rows and decode them; failures become StoreFailure. */
  const rows = (operation: string, statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
    statement.pipe(
      Effect.flatMap(decodeRows),
      Effect.map((decoded) => decoded.map(toIntent)),
      Effect.mapError(failure(operation))
    )

  const select = (operation: string, id: string) =>
    rows(operation, sql`SELECT * FROM workflow_turn_intents WHERE intent_id = ${id}`).pipe(
      Effect.map((found) => Option.fromNullable(found[0]))
    )

  const markEligible = (operation: string, id: string, factsJson: string | null) =>
    Effect.gen(function* () {
      const now = iso(yield* Clock.currentTimeMillis)
      return yield* rows(
        operation,
        sql`UPDATE workflow_turn_intents
          SET eligible_at = coalesce(eligible_at, ${now}),
              fallback_facts_json = coalesce(${factsJson}, fallback_facts_json)
          WHERE intent_id = ${id} AND resolved_at IS NULL
          RETURNING *`
      )
    })

  const ensure: TurnIntentStoreService["ensure"] = (input) =>
    Effect.gen(function* () {
      const facts = yield* validateFacts(input.facts)
      yield* checkId("workflowRef", input.workflowRef)
      yield* checkCause(input.cause)
      const id = yield* deriveIntentId(input)
      const now = yield* Clock.currentTimeMillis
      const requestedAt = iso(now)
      const eligibleAt = input.eligible === true ? requestedAt : null
      const inserted = yield* rows(
        "ensure",
        sql`INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, workflow_ref,
            target_session_id, cause, node_id, attempt_id, fallback_facts_json, requested_at, eligible_at)
          VALUES (${id}, ${input.sourceEventId}, ${input.runId}, ${input.workflowRef}, ${input.targetSessionId},
            ${input.cause}, ${input.nodeId}, ${input.attemptId}, ${encodeFactsJson(facts)}, ${requestedAt},
            ${eligibleAt})
          ON CONFLICT (intent_id) DO NOTHING
          RETURNING *`
      )
      if (inserted[0] !== undefined) return inserted[0]
      const existing = yield* select("ensure", id).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(new StoreFailure({ operation: "ensure", message: "row vanished" })),
            onSome: Effect.succeed
          })
        )
      )
      const differs = IMMUTABLE_FIELDS.filter((field) => existing[field] !== input[field])
      if (differs.length > 0) return yield* new IdentityCollision({ intentId: id, fields: differs })
      if (input.eligible === true && existing.resolvedAt === null && existing.eligibleAt === null) {
        const updated = yield* markEligible("ensure", id, null)
        return updated[0] ?? existing
      }
      return existing
    })

  const get: TurnIntentStoreService["get"] = (id) =>
    Effect.zipRight(checkId("intentId", id), select("get", id))

  const claimForRun: TurnIntentStoreService["claimForRun"] = (input) =>
    Effect.gen(function* () {
      yield* checkId("runId", input.runId)
      yield* checkId("targetSessionId", input.targetSessionId)
      yield* checkClaim(input)
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* rows(
        "claimForRun",
        sql`UPDATE workflow_turn_intents
          SET delivery_claim_token = ${input.token}, delivery_claim_expires_at = ${now + input.leaseMs}
          WHERE intent_id = (
            SELECT intent_id FROM workflow_turn_intents
            WHERE run_id = ${input.runId} AND target_session_id = ${input.targetSessionId}
              AND resolved_at IS NULL
              AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ${now}
                OR delivery_claim_token = ${input.token})
            ORDER BY requested_at, intent_id LIMIT 1)
          RETURNING *`
      )
      return Option.fromNullable(claimed[0])
    })

  const claimEligibleForSession: TurnIntentStoreService["claimEligibleForSession"] = (input) =>
    Effect.gen(function* () {
      yield* checkId("targetSessionId", input.targetSessionId)
      yield* checkClaim(input)
      yield* checkInteger("limit", input.limit, 1, MAX_LIST_LIMIT)
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* rows(
        "claimEligibleForSession",
        sql`UPDATE workflow_turn_intents
          SET delivery_claim_token = ${input.token}, delivery_claim_expires_at = ${now + input.leaseMs}
          WHERE intent_id IN (
            SELECT intent_id FROM workflow_turn_intents
            WHERE target_session_id = ${input.targetSessionId}
              AND resolved_at IS NULL AND eligible_at IS NOT NULL
              AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ${now}
                OR delivery_claim_token = ${input.token})
            ORDER BY eligible_at, intent_id LIMIT ${input.limit})
          RETURNING *`
      )
      // RETURNING order is unspecified; callers rely on eligibility order.
      return [...claimed].sort(
        (a, b) => ordinal(a.eligibleAt ?? "", b.eligibleAt ?? "") || ordinal(a.intentId, b.intentId)
      )
    })

  const makeEligible: TurnIntentStoreService["makeEligible"] = (input) =>
    Effect.gen(function* () {
      yield* checkId("intentId", input.intentId)
      const factsJson = input.facts === undefined ? null : encodeFactsJson(yield* validateFacts(input.facts))
      const updated = yield* markEligible("makeEligible", input.intentId, factsJson)
      if (updated[0] !== undefined) return updated[0]
      const existing = yield* select("makeEligible", input.intentId)
      if (Option.isNone(existing)) return yield* new IntentNotFound({ intentId: input.intentId })
      return existing.value
    })

  const resolve: TurnIntentStoreService["resolve"] = (input) =>
    Effect.gen(function* () {
      yield* checkId("intentId", input.intentId)
      yield* checkId("token", input.token)
      yield* checkId("messageId", input.messageId)
      yield* Schema.decodeUnknown(Resolution)(input.resolution).pipe(
        Effect.mapError(
          () =>
            new InvalidInput({
              field: "resolution",
              message: "resolution must be workflowPrompt, presentation or fallback"
            })
        )
      )
      const now = yield* Clock.currentTimeMillis
      const resolved = yield* rows(
        "resolve",
        sql`UPDATE workflow_turn_intents
          SET resolved_at = ${iso(now)}, resolution = ${input.resolution},
              resolution_message_id = ${input.messageId}
          WHERE intent_id = ${input.intentId} AND resolved_at IS NULL
            AND delivery_claim_token = ${input.token} AND delivery_claim_expires_at > ${now}
          RETURNING *`
      )
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
    Effect.gen(function* () {
      yield* checkId("intentId", input.intentId)
      yield* checkId("token", input.token)
      const released = yield* sql`UPDATE workflow_turn_intents
          SET delivery_claim_token = NULL, delivery_claim_expires_at = NULL
          WHERE intent_id = ${input.intentId} AND delivery_claim_token = ${input.token}
            AND resolved_at IS NULL
          RETURNING intent_id`.pipe(Effect.mapError(failure("release")))
      return released.length > 0
    })

  const list: TurnIntentStoreService["list"] = (query) =>
    Effect.gen(function* () {
      yield* checkInteger("limit", query.limit, 1, MAX_LIST_LIMIT)
      const where = []
      if (query.targetSessionId !== undefined) {
        yield* checkId("targetSessionId", query.targetSessionId)
        where.push(sql`target_session_id = ${query.targetSessionId}`)
      }
      if (query.runId !== undefined) {
        yield* checkId("runId", query.runId)
        where.push(sql`run_id = ${query.runId}`)
      }
      const state = query.state ?? "all"
      if (state === "pending") where.push(sql`resolved_at IS NULL`)
      else if (state === "resolved") where.push(sql`resolved_at IS NOT NULL`)
      else if (state !== "all") {
        return yield* new InvalidInput({ field: "state", message: "state must be pending, resolved or all" })
      }
      return yield* rows(
        "list",
        sql`SELECT * FROM workflow_turn_intents WHERE ${sql.and(where)}
          ORDER BY requested_at, intent_id LIMIT ${query.limit}`
      )
    })

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
