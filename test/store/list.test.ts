import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type { TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { openStore } from "../support/store.ts"

const T0 = Date.parse("2026-08-21T08:00:00.000Z")

/** Eight intents over two runs and two sessions; two of them resolved; some sharing a request time. */
const seed = (store: TurnIntentStoreService) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const created = []
    for (let i = 0; i < 8; i++) {
      created.push(
        yield* store.ensure(
          sampleIntent({
            sourceEventId: `e-${i}`,
            runId: i % 2 === 0 ? "run-a" : "run-b",
            targetSessionId: i < 4 ? "session-1" : "session-2"
          })
        )
      )
      // Pairs share a request instant, so the intent ID has to break ties.
      if (i % 2 === 1) yield* TestClock.adjust("1 second")
    }
    for (const runId of ["run-a", "run-b"]) {
      yield* store.claimForRun({ runId, targetSessionId: "session-1", token: "t", leaseMs: 1_000 })
    }
    // The oldest intent of each run in session-1: e-0 (run-a) and e-1 (run-b).
    for (const intent of created.slice(0, 2)) {
      yield* store.resolve({ intentId: intent.intentId, token: "t", resolution: "fallback", messageId: "m" })
    }
    return created
  })

const ordered = (intents: ReadonlyArray<{ requestedAt: string; intentId: string }>) =>
  [...intents].sort((a, b) =>
    a.requestedAt === b.requestedAt
      ? a.intentId < b.intentId
        ? -1
        : 1
      : a.requestedAt < b.requestedAt
        ? -1
        : 1
  )

describe("list", () => {
  it.scoped("orders by request time, then intent ID, and stops at the limit", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const created = yield* seed(store)
      const all = yield* store.list({ limit: 100 })
      expect(all.map((i) => i.intentId)).toEqual(ordered(created).map((i) => i.intentId))
      expect((yield* store.list({ limit: 3 })).map((i) => i.intentId)).toEqual(
        all.slice(0, 3).map((i) => i.intentId)
      )
      expect(yield* store.list({ limit: 1_000, state: "all" })).toEqual(all)
    })
  )

  it.scoped("filters by session, run and state, in any combination", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      yield* seed(store)
      const all = yield* store.list({ limit: 100 })
      const ids = (intents: ReadonlyArray<{ intentId: string }>) => intents.map((i) => i.intentId)
      const expect_ = (
        query: { targetSessionId?: string; runId?: string; state?: "pending" | "resolved" | "all" },
        keep: (i: (typeof all)[number]) => boolean
      ) =>
        Effect.gen(function* () {
          const got = yield* store.list({ ...query, limit: 100 })
          expect(ids(got)).toEqual(ids(all.filter(keep)))
          expect(got.length).toBeGreaterThan(0)
        })
      yield* expect_({ targetSessionId: "session-2" }, (i) => i.targetSessionId === "session-2")
      yield* expect_({ runId: "run-b" }, (i) => i.runId === "run-b")
      yield* expect_({ state: "pending" }, (i) => i.resolvedAt === null)
      yield* expect_({ state: "resolved" }, (i) => i.resolvedAt !== null)
      yield* expect_(
        { targetSessionId: "session-1", runId: "run-a", state: "pending" },
        (i) => i.targetSessionId === "session-1" && i.runId === "run-a" && i.resolvedAt === null
      )
      expect(yield* store.list({ runId: "run-zzz", limit: 5 })).toEqual([])
      expect((yield* store.list({ state: "resolved", limit: 100 })).length).toBe(2)
    })
  )
})
