/**
 * Cross-process answer race: several real Node processes answer the same waiting checkpoints in
 * one database (a SQLite file, or PostgreSQL in the `postgres` project), one of them also timing
 * waits out as a deadline watcher would. The first answer wins durably: exactly one winner per
 * wait, the stored answer is the winner's, every loser is refused `answered` or `closed`, and
 * no store failure (SQLITE_BUSY, a serialization failure) reaches a caller.
 */
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { RunStore } from "../../src/store/run-store.ts"
import { newRun } from "../cli/cli-support.ts"
import { backend, freshLocation } from "../support/backend.ts"
import { raceWorkers } from "./race-workers.ts"
import { rowsAt, storesAt } from "./location.ts"
import { decodeWaitReport, type WaitWorkerConfig, type WaitWorkerReport } from "./wait-protocol.ts"

const WORKERS = 4
const WAITS = 40
const WORKER_SCRIPT = fileURLToPath(new URL("./wait-worker.ts", import.meta.url))

const waits = Array.from({ length: WAITS }, (_, i) => ({
  requestId: `req-race-${i}`,
  sessionId: `s-race-${i}`
}))

const seed = (location: string) =>
  Effect.gen(function* () {
    const runs = yield* RunStore
    for (const [i, { requestId, sessionId }] of waits.entries()) {
      const runId = `run-race-${i}`
      const fence = { runId, token: `t-${runId}` }
      yield* runs.reserve(newRun(runId, sessionId))
      yield* runs.claim({ ...fence, leaseMs: 60_000, mode: "activate" })
      yield* runs.startStep(fence, { nodeId: "ask", attemptId: `att-${runId}` })
      yield* runs.wait(fence, {
        nodeId: "ask",
        attemptId: `att-${runId}`,
        requestId,
        prompt: "Approve?",
        // Already due: an answer still wins until a watcher applies the deadline.
        deadlineAt: Date.now() - 1,
        timeoutMs: 60_000
      })
    }
  }).pipe(Effect.provide(storesAt(location)), Effect.scoped)

describe("cross-process answer race", () => {
  it.live(
    `${WORKERS} processes answer ${WAITS} waits (${backend}): one winner each, stored as won, the rest refused`,
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const location = yield* freshLocation
          yield* seed(location)
          const configs = Array.from(
            { length: WORKERS },
            (_, i): WaitWorkerConfig => ({
              location,
              worker: `w${i}`,
              seed: 7_000 + i,
              waits,
              expires: i === 0
            })
          )
          const { reports } = yield* raceWorkers(WORKER_SCRIPT, configs, decodeWaitReport)
          expect(reports.filter((r) => r.type === "error")).toEqual([])
          expect(reports.filter((r) => r.type === "done")).toHaveLength(WORKERS)

          const winners = new Map<string, Array<WaitWorkerReport & { type: "won" }>>()
          for (const r of reports)
            if (r.type === "won") winners.set(r.requestId, [...(winners.get(r.requestId) ?? []), r])
          for (const { requestId } of waits) expect(winners.get(requestId), requestId).toHaveLength(1)
          const refusals = new Set(reports.flatMap((r) => (r.type === "lost" ? [r.reason] : [])))
          for (const reason of refusals) expect(["answered", "closed", "not expired"]).toContain(reason)
          // Every worker took part in every wait: one winner, WORKERS - 1 refused.
          expect(reports.filter((r) => r.type === "lost")).toHaveLength(WAITS * (WORKERS - 1))

          const rows = yield* rowsAt(
            location,
            Schema.Struct({
              request_id: Schema.String,
              state: Schema.String,
              output_json: Schema.NullOr(Schema.String)
            }),
            "SELECT w.request_id, q.state, q.output_json FROM workflow_waits w JOIN workflow_requests q ON q.request_id = w.request_id"
          )
          expect(rows).toHaveLength(WAITS)
          for (const row of rows) {
            const [won] = winners.get(row.request_id) ?? []
            if (won?.how === "answer") {
              expect(row.state).toBe("submitted")
              expect(JSON.parse(row.output_json ?? "null")).toEqual({ answer: won.answer })
            } else {
              expect(row.state).toBe("closed")
            }
          }
          // The race was contested both ways: answers and expiries each won some waits.
          const hows = new Set([...winners.values()].flatMap((w) => w.map((r) => r.how)))
          expect(hows).toEqual(new Set(["answer", "expire"]))
        })
      ),
    120_000
  )
})
