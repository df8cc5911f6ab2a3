/**
 * Cross-process race: several real Node processes claim, release, abandon and resolve the same
 * intents in one database (a SQLite file, or a PostgreSQL database in the `postgres` project).
 * The store must never grant one intent to two claimants at once, must let exactly one resolve
 * win per intent, lose none, and surface no store failure (SQLITE_BUSY, serialization failures).
 *
 * RACE_INTENTS / RACE_WORKERS / RACE_DURATION_MS scale it up (`npm run race:pg` runs ≥ 10^4 ops
 * on PostgreSQL; docs/postgres.md has the figures).
 */
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { raceWorkers } from "./race-workers.ts"
import { sampleFacts, sampleIntent } from "../support/fixtures.ts"
import { backend, freshLocation } from "../support/backend.ts"
import { openStoreAt } from "../support/store.ts"
import { decodeReport, type WorkerConfig } from "./intent-protocol.ts"
import { rowsAt } from "./location.ts"
import { overlappingClaims } from "./overlap.ts"

const WORKERS = Number(process.env.RACE_WORKERS ?? 4)
const SESSIONS = 3
const RUNS_PER_SESSION = 5
const INTENTS = Number(process.env.RACE_INTENTS ?? 300)
const DURATION_MS = Number(process.env.RACE_DURATION_MS ?? Math.max(15_000, INTENTS * 12))
const WORKER_SCRIPT = fileURLToPath(new URL("./intent-worker.ts", import.meta.url))

const runs = Array.from({ length: SESSIONS * RUNS_PER_SESSION }, (_, i) => ({
  runId: `race-run-${i}`,
  targetSessionId: `race-session-${i % SESSIONS}`
}))
const sessions = Array.from({ length: SESSIONS }, (_, i) => `race-session-${i}`)

describe("cross-process race", () => {
  it.live(
    `${WORKERS} processes × ${INTENTS} intents (${backend}): no duplicate claim or resolution, none lost, no store failure`,
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          expect(WORKERS).toBeGreaterThanOrEqual(3)
          const location = yield* freshLocation
          // Seed every intent eligible, spread over runs and sessions.
          yield* Effect.scoped(
            Effect.gen(function* () {
              const store = yield* openStoreAt(location)
              for (let i = 0; i < INTENTS; i++) {
                const run = runs[i % runs.length] ?? runs[0]
                yield* store.ensure(
                  sampleIntent({
                    ...run,
                    sourceEventId: `race-event-${i}`,
                    eligible: true,
                    facts: sampleFacts({ runId: run?.runId ?? "" })
                  })
                )
              }
            })
          )

          const configs = Array.from(
            { length: WORKERS },
            (_, i): WorkerConfig => ({
              location,
              worker: `w${i}`,
              seed: 1_000 + i,
              durationMs: DURATION_MS,
              runs,
              sessions
            })
          )
          // Start barrier: every process has opened the database before anyone claims.
          const { reports, elapsedMs } = yield* raceWorkers(WORKER_SCRIPT, configs, decodeReport)

          const errors = reports.filter((r) => r.type === "error")
          const resolvedReports = reports.flatMap((r) => (r.type === "resolved" ? [r] : []))
          const done = reports.flatMap((r) => (r.type === "done" ? [r] : []))
          expect(done).toHaveLength(WORKERS)

          // No intent was ever held by two claimants at once.
          const claims = reports.flatMap((r) => (r.type === "claimed" ? [r] : []))
          const releases = reports.flatMap((r) => (r.type === "released" ? [r] : []))
          const duplicateClaims = overlappingClaims(claims, releases)
          expect(duplicateClaims).toEqual([])

          // No store failure of any kind leaked, SQLITE_BUSY included.
          expect(errors).toEqual([])

          // Zero duplicates: each intent was reported resolved at most once.
          const perIntent = new Map<string, Array<string>>()
          for (const r of resolvedReports)
            perIntent.set(r.intentId, [...(perIntent.get(r.intentId) ?? []), r.messageId])
          const duplicates = [...perIntent.entries()].filter(([, ids]) => ids.length > 1)
          expect(duplicates).toEqual([])

          // Zero lost: every intent is resolved in the database, by exactly the reported winner.
          const rows = yield* rowsAt(
            location,
            Schema.Struct({
              intent_id: Schema.String,
              resolved_at: Schema.NullOr(Schema.String),
              resolution_message_id: Schema.NullOr(Schema.String)
            }),
            "SELECT intent_id, resolved_at, resolution_message_id FROM workflow_turn_intents"
          )
          expect(rows).toHaveLength(INTENTS)
          const unresolved = rows.filter((row) => row.resolved_at === null)
          expect(unresolved).toEqual([])
          expect(perIntent.size).toBe(INTENTS)
          for (const row of rows) expect(perIntent.get(row.intent_id)).toEqual([row.resolution_message_id])

          const totals: Record<string, number> = {}
          for (const { stats } of done) {
            for (const [key, value] of Object.entries(stats)) totals[key] = (totals[key] ?? 0) + value
          }
          // The scenario must actually have contended: leases expired and stale resolves lost.
          expect(totals.notHeld ?? 0).toBeGreaterThan(0)
          expect(totals.abandoned ?? 0).toBeGreaterThan(0)
          const seconds = elapsedMs / 1_000
          console.log(
            [
              `race (${backend}): ${WORKERS} processes × ${INTENTS} intents in ${seconds.toFixed(2)} s`,
              `  resolved ${rows.length - unresolved.length}/${INTENTS}, duplicate claims ${duplicateClaims.length}, duplicate resolutions ${duplicates.length}, lost ${unresolved.length}, store failures ${errors.length}`,
              `  store ops ${totals.ops} (${Math.round((totals.ops ?? 0) / seconds)} ops/s), resolves ${Math.round(INTENTS / seconds)}/s`,
              `  claims: calls ${totals.claimCalls}, intents claimed ${totals.claimed}, released ${totals.released}, abandoned ${totals.abandoned}, held past lease ${totals.heldPastLease}, resolve lost (ClaimNotHeld) ${totals.notHeld}`,
              `  per worker resolved: ${done.map((d) => `${d.worker}=${d.stats.resolved}`).join(" ")}`
            ].join("\n")
          )
        })
      ),
    // Seeding is sequential: a long run (RACE_INTENTS=5000) needs longer than the race itself.
    DURATION_MS + 15_000 + INTENTS * 10
  )
})
