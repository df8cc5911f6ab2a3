/**
 * Where the layer's time goes, for one natural claim (`claimForRun`, a re-claim that updates and
 * returns one row): the query path, the row decoding and the argument checks, each timed alone,
 * for the current store and for the bench/proto alternative. The same pieces explain the other
 * ops, which differ only in SQL and in how many of these steps they take.
 */
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { FallbackFactsJson, validateFacts } from "../src/domain/facts.ts"
import { checkId, intentId } from "../src/domain/identity.ts"
import { Cause, Resolution } from "../src/domain/turn-intent.ts"
import { TurnIntentStore } from "../src/store/turn-intent-store.ts"
import { layerSqlite } from "../src/store/turn-intent-store-sqlite.ts"
import { LEASE_MS, workload } from "./fixtures.ts"
import { FastDatabase } from "./proto/database-fast.ts"
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

interface Line {
  readonly part: string
  readonly what: string
  readonly summary: Summary
}

export const breakdownSection: BenchSection = {
  id: "breakdown",
  title: "Where the layer's time goes (one `claimForRun`)",
  run: async (context) => {
    const loop: Loop = context.quick ? { ops: 2_000, warmup: 500, rounds: 3 } : { ops: 10_000, warmup: 2_000, rounds: 3 }
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
    const add = (part: string, what: string, summary: Summary) => lines.push({ part, what, summary })

    add("query", "raw `stmt.all` (the floor)", timeSync(loop, () => statement.all(...params())))
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const current = yield* Layer.build(layerSqlite({ filename }))
          const proto = yield* Layer.build(layerFast({ filename }))
          const sql = Context.get(current, SqlClient.SqlClient)
          const fast = Context.get(proto, FastDatabase).prepare(SQL.claimForRun)
          const semaphore = yield* Effect.makeSemaphore(1)
          add(
            "query",
            "proto: statement prepared once, run in the fiber when no transaction is open",
            yield* timeEffect(loop, () => fast.all(params()))
          )
          add(
            "query",
            "current: `sql.unsafe(text, params)` through @effect/sql + sql-sqlite-node",
            yield* timeEffect(loop, () => sql.unsafe(SQL.claimForRun, params()))
          )
          add("query · alone", "`Effect.scoped(Effect.void)` (a Scope per query)", yield* timeEffect(loop, () => Effect.scoped(Effect.void)))
          add(
            "query · alone",
            "`semaphore.withPermits(1)` (the connection lock)",
            yield* timeEffect(loop, () => semaphore.withPermits(1)(Effect.void))
          )
          add(
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
          add("decode", "current: Schema row, strict (`onExcessProperty: \"error\"`)", yield* timeEffect(loop, () => decodeStrict([row])))
          add("decode", "Schema row, not strict", yield* timeEffect(loop, () => decodeLoose([row])))
          add(
            "decode",
            "proto: column checks + strict key check + Schema for the facts",
            timeSync(loop, () => toIntent("breakdown", row))
          )
          add(
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
          add("ensure only", "`validateFacts` (strict Schema decode of the facts object)", yield* timeEffect(loop, () => validateFacts(w.input.facts)))
          add("ensure only", "`intentId` (SHA-256 over the key)", yield* timeEffect(loop, () => intentId(w.input)))
          add(
            "whole op",
            "current `claimForRun`",
            yield* timeEffect(loop, () => Context.get(current, TurnIntentStore).claimForRun(claim))
          )
          add(
            "whole op",
            "proto `claimForRun`",
            yield* timeEffect(loop, () => Context.get(proto, TurnIntentStore).claimForRun(claim))
          )
        })
      )
    )
    raw.close()
    const find = (prefix: string) => lines.find((l) => l.what.startsWith(prefix))?.summary.median ?? Number.NaN
    const floor = find("raw")
    const viaSql = find("current: `sql.unsafe")
    const viaFast = find("proto: statement")
    const pieces = find("`Effect.scoped") + find("`semaphore") + find("`Effect.useSpan")
    const markdown = [
      `${loop.ops.toLocaleString("en")} timed calls after ${loop.warmup.toLocaleString("en")} untimed, median of ` +
        `${loop.rounds} rounds, µs. Each line is timed on its own, inside one fiber where it is an Effect.`,
      "",
      table(
        ["part", "what", "median", "p99"],
        lines.map((l) => [l.part, l.what, us(l.summary.median), us(l.summary.p99)])
      ),
      "",
      `- The @effect/sql statement path adds ${us(viaSql - floor)} µs per query over the floor; a Scope, the ` +
        `connection semaphore and the span alone add up to ${us(pieces)} µs of it. The prepared-once path adds ` +
        `${us(viaFast - floor)} µs.`,
      "- The goal of ≤ 1.5× leaves 5–15 µs per op on these floors, so the statement path alone spends it; " +
        "row decoding and generator-based checks come on top.",
      "- The proto column of the store table shows what all three changes together give per op."
    ].join("\n")
    return { markdown, checks: [], goals: [] }
  }
}
