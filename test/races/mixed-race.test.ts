/**
 * Cross-process race over runs and turn intents at once: several real Node processes on one
 * database (a SQLite file, or a PostgreSQL database in the `postgres` project) claim, renew, expire, park and end the same runs while they claim, resolve,
 * release and abandon the same intents. Judged from the database itself:
 *
 * - runs: no double ownership (once another claimant has written to a run, an earlier one never
 *   writes to it again), every accepted write is stored and nothing else is, every run ends
 *   exactly once, none is lost;
 * - intents: each resolved exactly once, by the reported winner, none lost;
 * - no store failure of any kind (SQLITE_BUSY and serialization failures included).
 */
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { raceWorkers } from "./race-workers.ts"
import { sampleFacts, sampleIntent } from "../support/fixtures.ts"
import { backend, freshLocation } from "../support/backend.ts"
import { decodeReport, type WorkerConfig } from "./mixed-protocol.ts"
import { rowsAt, storesAt } from "./location.ts"

const WORKERS = Number(process.env.RACE_WORKERS ?? 4)
const RUNS = Number(process.env.RACE_RUNS ?? 16)
const INTENTS = Number(process.env.RACE_INTENTS ?? 200)
const DURATION_MS = Number(process.env.RACE_DURATION_MS ?? 10_000)
const STEPS_TO_FINISH = 10
const WORKER_SCRIPT = fileURLToPath(new URL("./mixed-worker.ts", import.meta.url))

const runIds = Array.from({ length: RUNS }, (_, i) => `mixed-run-${i}`)
const sessions = ["mixed-session-0", "mixed-session-1", "mixed-session-2"]
const intentRuns = Array.from({ length: 12 }, (_, i) => ({
  runId: `mixed-intent-run-${i}`,
  targetSessionId: sessions[i % sessions.length] ?? ""
}))

const seed = (location: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(storesAt(location))
      const runs = yield* Effect.provide(RunStore, context)
      const intents = yield* Effect.provide(TurnIntentStore, context)
      for (const [i, runId] of runIds.entries()) {
        // One queued-or-active run per session: each run has its own.
        yield* runs.reserve({
          runId,
          workflowName: "race",
          workflowRef: "race@1",
          revision: 1,
          sourceFingerprint: "sha256:race",
          snapshot: {},
          targetSessionId: `run-session-${i}`,
          origin: "tool",
          input: null,
          startAt: "work",
          maxSteps: 100
        })
      }
      for (let i = 0; i < INTENTS; i++) {
        const run = intentRuns[i % intentRuns.length] ?? intentRuns[0]
        yield* intents.ensure(
          sampleIntent({
            ...run,
            sourceEventId: `mixed-event-${i}`,
            eligible: true,
            facts: sampleFacts({ runId: run?.runId ?? "" })
          })
        )
      }
    })
  )

describe("cross-process race over runs and intents", () => {
  it.live(
    `${WORKERS} processes × ${RUNS} runs + ${INTENTS} intents (${backend}): no double ownership, no duplicate, nothing lost`,
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const location = yield* freshLocation
          yield* seed(location)
          const configs = Array.from(
            { length: WORKERS },
            (_, i): WorkerConfig => ({
              location,
              worker: `w${i}`,
              seed: 7_000 + i,
              durationMs: DURATION_MS,
              stepsToFinish: STEPS_TO_FINISH,
              runIds,
              intentRuns,
              sessions
            })
          )
          const { reports, elapsedMs } = yield* raceWorkers(WORKER_SCRIPT, configs, decodeReport)
          const seconds = elapsedMs / 1_000

          const done = reports.flatMap((r) => (r.type === "done" ? [r] : []))
          expect(done).toHaveLength(WORKERS)
          const totals: Record<string, number> = {}
          for (const { stats } of done) {
            for (const [key, value] of Object.entries(stats)) totals[key] = (totals[key] ?? 0) + value
          }
          const errors = reports.filter((r) => r.type === "error")
          expect(errors).toEqual([])

          // Runs: what the database holds against what the workers were told was accepted.
          const steps = yield* rowsAt(
            location,
            Schema.Struct({ run_id: Schema.String, seq: Schema.Number, attempt_id: Schema.String }),
            "SELECT run_id, seq, attempt_id FROM workflow_steps ORDER BY run_id, seq"
          )
          const wrote = reports.flatMap((r) => (r.type === "wrote" ? [`${r.runId}/${r.attemptId}`] : []))
          expect(new Set(steps.map((s) => `${s.run_id}/${s.attempt_id}`))).toEqual(new Set(wrote))
          expect(steps).toHaveLength(wrote.length)
          let doubleOwnership = 0
          for (const runId of runIds) {
            const tokens = steps
              .filter((s) => s.run_id === runId)
              .map((s) => s.attempt_id.replace(/:\d+$/, ""))
            const segments = tokens.filter((token, i) => i === 0 || tokens[i - 1] !== token)
            doubleOwnership += segments.length - new Set(segments).size
          }
          const runRows = yield* rowsAt(
            location,
            Schema.Struct({ run_id: Schema.String, state: Schema.String, claims: Schema.Number }),
            "SELECT run_id, state, claims FROM workflow_runs"
          )
          const ended = reports.flatMap((r) => (r.type === "ended" ? [r.runId] : []))
          const lostRuns = runRows.filter((r) => r.state !== "completed").map((r) => r.run_id)
          const endedTwice = ended.filter((runId, i) => ended.indexOf(runId) !== i)

          // Intents.
          const resolved = reports.flatMap((r) => (r.type === "resolved" ? [r] : []))
          const perIntent = new Map<string, string[]>()
          for (const r of resolved)
            perIntent.set(r.intentId, [...(perIntent.get(r.intentId) ?? []), r.messageId])
          const duplicates = [...perIntent.values()].filter((ids) => ids.length > 1).length
          const intentRows = yield* rowsAt(
            location,
            Schema.Struct({ intent_id: Schema.String, resolution_message_id: Schema.NullOr(Schema.String) }),
            "SELECT intent_id, resolution_message_id FROM workflow_turn_intents"
          )
          const lostIntents = intentRows.filter((r) => r.resolution_message_id === null).length

          const ops = totals.ops ?? 0
          console.log(
            [
              `mixed race (${backend}): ${WORKERS} processes, ${RUNS} runs + ${INTENTS} intents in ${seconds.toFixed(2)} s, ${ops} store ops (${Math.round(ops / seconds)}/s)`,
              `  runs: claims ${totals.runClaims}, claim lost ${totals.ClaimLost ?? 0}, refused ${totals.ClaimRefused ?? 0}, slept past lease ${totals.sleptPastLease}, parked ${totals.parked}, abandoned ${totals.abandonedRuns}; fenced writes ${wrote.length}; double ownership ${doubleOwnership}, ended twice ${endedTwice.length}, lost ${lostRuns.length}`,
              `  intents: claimed ${totals.intentsClaimed}, resolve refused ${totals.ClaimNotHeld ?? 0}, abandoned ${totals.abandonedIntents}, held past lease ${totals.heldPastLease}; duplicates ${duplicates}, lost ${lostIntents}; store failures ${errors.length}`
            ].join("\n")
          )

          expect(doubleOwnership).toBe(0)
          expect(endedTwice).toEqual([])
          expect(lostRuns).toEqual([])
          expect(new Set(ended)).toEqual(new Set(runIds))
          expect(duplicates).toBe(0)
          expect(lostIntents).toBe(0)
          for (const row of intentRows)
            expect(perIntent.get(row.intent_id)).toEqual([row.resolution_message_id])
          // The race must really have contended: owners lost runs and stale resolves lost.
          expect(totals.ClaimLost ?? 0).toBeGreaterThan(0)
          expect(totals.ClaimNotHeld ?? 0).toBeGreaterThan(0)
          expect(Math.max(...runRows.map((r) => r.claims))).toBeGreaterThan(1)
        })
      ),
    DURATION_MS + 30_000
  )
})
