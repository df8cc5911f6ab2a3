/**
 * Where the layer's time goes, for one natural claim (`claimForRun`, a re-claim that updates and
 * returns one row): the query path, the row decoding and the argument checks, each timed alone,
 * for the current store and for the bench/proto alternative. The same pieces explain the other
 * ops, which differ only in SQL and in how many of these steps they take.
 */
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Cache, Clock, Context, Duration, Effect, Layer, Schema } from "effect"
import { FallbackFactsJson, validateFacts } from "../src/domain/facts.ts"
import { checkId, intentId } from "../src/domain/identity.ts"
import { Cause, Resolution } from "../src/domain/turn-intent.ts"
import { TurnIntentStore } from "../src/store/turn-intent-store.ts"
import { layerSqlite } from "../src/store/turn-intent-store-sqlite.ts"
import { LEASE_MS, workload } from "./fixtures.ts"
import { FastDatabase } from "./proto/database-fast.ts"
import { intentIdFast, validateFactsFast } from "./proto/domain-fast.ts"
import { layerSqlite as layerFast, toIntent } from "./proto/turn-intent-store-fast.ts"
import type { BenchSection } from "./section.ts"
import { openRaw, RawStore, SQL } from "./sql.ts"
import { type Summary, table, us } from "./stats.ts"
import { type Loop, timeEffect, timeSync } from "./timing.ts"

/** Mirror of the Row schema in src/store/turn-intent-store-sqlite.ts (not exported there). */
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
const decodeStrict = Schema.decodeUnknown(Schema.Array(Row), { onExcessProperty: "error" })
const decodeLoose = Schema.decodeUnknown(Schema.Array(Row))

type Key =
  | "floor"
  | "noTriggers"
  | "protoQuery"
  | "sqlQuery"
  | "sqlNoTracer"
  | "scope"
  | "semaphore"
  | "span"
  | "cache"
  | "decodeStrict"
  | "decodeLoose"
  | "decodeProto"
  | "checksGen"
  | "checksPlain"
  | "clock"
  | "validateFacts"
  | "validateFactsProto"
  | "intentId"
  | "intentIdProto"
  | "opCurrent"
  | "opProto"

interface Line {
  readonly key: Key
  readonly part: string
  readonly what: string
  readonly summary: Summary
}

export const breakdownSection: BenchSection = {
  id: "breakdown",
  title: "Where the layer's time goes (one `claimForRun`)",
  run: async (context) => {
    const loop: Loop = context.quick
      ? { ops: 2_000, warmup: 500, rounds: 3 }
      : { ops: 10_000, warmup: 2_000, rounds: 3 }
    const filename = join(context.tempRoot, "breakdown.db")
    const w = workload("breakdown", 0)
    const raw = new RawStore(openRaw(filename))
    raw.ensure(w.raw)
    const token = "breakdown-token"
    const params = () => {
      const now = Date.now()
      return [token, now + LEASE_MS, w.raw.runId, w.raw.targetSessionId, now, token]
    }
    const statement = raw.db.prepare(SQL.claimForRun)
    const row: unknown = statement.all(...params())[0]
    const claim = { runId: w.raw.runId, targetSessionId: w.raw.targetSessionId, token, leaseMs: LEASE_MS }
    const lines: Array<Line> = []
    const add = (key: Key, part: string, what: string, summary: Summary) =>
      lines.push({ key, part, what, summary })

    add(
      "floor",
      "query",
      "raw `stmt.all` (the floor)",
      timeSync(loop, () => statement.all(...params()))
    )
    // The immutability triggers are part of the floor too; this is what they cost in it.
    const bare = new RawStore(openRaw(join(context.tempRoot, "breakdown-no-triggers.db")))
    bare.db.exec("DROP TRIGGER workflow_turn_intents_resolved_immutable")
    bare.db.exec("DROP TRIGGER workflow_turn_intents_identity_immutable")
    bare.ensure(w.raw)
    const bareStatement = bare.db.prepare(SQL.claimForRun)
    add(
      "noTriggers",
      "query",
      "raw `stmt.all` without the two immutability triggers",
      timeSync(loop, () => bareStatement.all(...params()))
    )
    bare.close()
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const current = yield* Layer.build(layerSqlite({ filename }))
          const proto = yield* Layer.build(layerFast({ filename }))
          const sql = Context.get(current, SqlClient.SqlClient)
          const fast = Context.get(proto, FastDatabase).prepare(SQL.claimForRun)
          const semaphore = yield* Effect.makeSemaphore(1)
          add(
            "protoQuery",
            "query",
            "proto: statement prepared once, run in the fiber when no transaction is open",
            yield* timeEffect(loop, () => fast.all(params()))
          )
          add(
            "sqlQuery",
            "query",
            "current: `sql.unsafe(text, params)` through @effect/sql + sql-sqlite-node",
            yield* timeEffect(loop, () => sql.unsafe(SQL.claimForRun, params()))
          )
          add(
            "sqlNoTracer",
            "query",
            "current, inside `Effect.withTracerEnabled(false)`",
            yield* timeEffect(loop, () =>
              Effect.withTracerEnabled(sql.unsafe(SQL.claimForRun, params()), false)
            )
          )
          add(
            "scope",
            "query · alone",
            "`Effect.scoped(Effect.void)` (a Scope per query)",
            yield* timeEffect(loop, () => Effect.scoped(Effect.void))
          )
          add(
            "semaphore",
            "query · alone",
            "`semaphore.withPermits(1)` (the connection lock)",
            yield* timeEffect(loop, () => semaphore.withPermits(1)(Effect.void))
          )
          add(
            "span",
            "query · alone",
            "`Effect.useSpan` + 2 attributes (the `sql.execute` span)",
            yield* timeEffect(loop, () =>
              Effect.useSpan("sql.execute", { kind: "client", captureStackTrace: false }, (span) => {
                span.attribute("db.operation.name", "execute")
                span.attribute("db.query.text", SQL.claimForRun)
                return Effect.void
              })
            )
          )
          const prepareCache = yield* Cache.make({
            capacity: 200,
            timeToLive: Duration.minutes(10),
            lookup: (text: string) => Effect.succeed(text.length)
          })
          add(
            "cache",
            "query · alone",
            "`Cache.get(sql text)` (sql-sqlite-node's prepare cache, keyed by the full text)",
            yield* timeEffect(loop, () => prepareCache.get(SQL.claimForRun))
          )
          add(
            "decodeStrict",
            "decode",
            'current: Schema row, strict (`onExcessProperty: "error"`)',
            yield* timeEffect(loop, () => decodeStrict([row]))
          )
          add(
            "decodeLoose",
            "decode",
            "Schema row, not strict",
            yield* timeEffect(loop, () => decodeLoose([row]))
          )
          add(
            "decodeProto",
            "decode",
            "proto: column checks + strict key check + Schema for the facts",
            timeSync(loop, () => toIntent("breakdown", row))
          )
          add(
            "checksGen",
            "checks",
            "current: `Effect.gen` with 3 `checkId` + lease check + `Clock`",
            yield* timeEffect(loop, () =>
              Effect.gen(function* () {
                yield* checkId("runId", claim.runId)
                yield* checkId("targetSessionId", claim.targetSessionId)
                yield* checkId("token", claim.token)
                if (!Number.isSafeInteger(claim.leaseMs)) return yield* Effect.fail("lease")
                return yield* Clock.currentTimeMillis
              })
            )
          )
          add(
            "checksPlain",
            "checks",
            "proto: plain checks in one `Effect.suspend` + `Clock`",
            yield* timeEffect(loop, () =>
              Effect.suspend(() =>
                claim.runId.length > 0 &&
                claim.targetSessionId.length > 0 &&
                claim.token.length > 0 &&
                Number.isSafeInteger(claim.leaseMs)
                  ? Clock.currentTimeMillis
                  : Effect.fail("bad")
              )
            )
          )
          add(
            "clock",
            "checks",
            "`Clock.currentTimeMillis` alone",
            yield* timeEffect(loop, () => Clock.currentTimeMillis)
          )
          add(
            "validateFacts",
            "ensure only",
            "current: `validateFacts` (strict Schema decode of the facts object)",
            yield* timeEffect(loop, () => validateFacts(w.input.facts))
          )
          add(
            "validateFactsProto",
            "ensure only",
            "proto: key check + non-strict Schema, src function only on failure",
            yield* timeEffect(loop, () => validateFactsFast(w.input.facts))
          )
          add(
            "intentId",
            "ensure only",
            "current: `intentId` (5 `checkId` in `Effect.gen` + SHA-256)",
            yield* timeEffect(loop, () => intentId(w.input))
          )
          add(
            "intentIdProto",
            "ensure only",
            "proto: plain checks + the same SHA-256",
            yield* timeEffect(loop, () => intentIdFast(w.input))
          )
          add(
            "opCurrent",
            "whole op",
            "current `claimForRun`",
            yield* timeEffect(loop, () => Context.get(current, TurnIntentStore).claimForRun(claim))
          )
          add(
            "opProto",
            "whole op",
            "proto `claimForRun`",
            yield* timeEffect(loop, () => Context.get(proto, TurnIntentStore).claimForRun(claim))
          )
        })
      )
    )
    raw.close()
    const get = (key: Key) => lines.find((l) => l.key === key)?.summary.median ?? Number.NaN
    const floor = get("floor")
    const pieces = get("scope") + get("semaphore") + get("span") + get("cache")
    const markdown = [
      `${loop.ops.toLocaleString("en")} timed calls after ${loop.warmup.toLocaleString("en")} untimed, median of ` +
        `${loop.rounds} rounds, µs. Each line is timed on its own, inside one fiber where it is an Effect.`,
      "",
      table(
        ["part", "what", "median", "p99"],
        lines.map((l) => [l.part, l.what, us(l.summary.median), us(l.summary.p99)])
      ),
      "",
      "Findings (this run's numbers):",
      "",
      `1. **The @effect/sql statement path** costs ${us(get("sqlQuery") - floor)} µs per query over the floor ` +
        `(${us(floor)} µs here): a Scope per query ${us(get("scope"))}, the connection semaphore ` +
        `${us(get("semaphore"))}, the \`sql.execute\` span ${us(get("span"))}, the prepare-cache lookup ` +
        `${us(get("cache"))} (together ${us(pieces)}), the rest is fiber plumbing. With the tracer disabled it is ` +
        `${us(get("sqlNoTracer") - floor)} µs: a no-op span still goes through the same steps. A ≤ 1.5× goal leaves 5–15 µs per op on these floors, so this path ` +
        "alone misses it. " +
        `A statement prepared once and run in the fiber adds ${us(get("protoQuery") - floor)} µs.`,
      `2. **Row decoding** with the strict Schema row costs ${us(get("decodeStrict"))} µs per row ` +
        `(\`onExcessProperty: "error"\` alone ${us(get("decodeStrict") - get("decodeLoose"))} µs of it); column ` +
        `checks plus a strict key check plus Schema for the facts: ${us(get("decodeProto"))} µs, same strictness.`,
      `3. **Argument checks** as \`Effect.gen\` steps cost ${us(get("checksGen"))} µs, as plain checks in one ` +
        `\`Effect.suspend\` ${us(get("checksPlain"))} µs. \`Clock\` is ${us(get("clock"))} µs and the ` +
        `immutability triggers ${us(floor - get("noTriggers"))} µs: neither matters.`,
      `4. **ensure's input work**: \`validateFacts\` ${us(get("validateFacts"))} → ${us(get("validateFactsProto"))} µs, ` +
        `\`intentId\` ${us(get("intentId"))} → ${us(get("intentIdProto"))} µs with the prototypes in bench/proto/domain-fast.ts ` +
        "(same digest, same errors: invalid input falls through to the src function).",
      `5. Whole \`claimForRun\`: current ${us(get("opCurrent"))} µs, prototype ${us(get("opProto"))} µs, floor ${us(floor)} µs. ` +
        "The prototype column of the store table shows every op with all changes applied."
    ].join("\n")
    return { markdown, checks: [], goals: [] }
  }
}
