import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { StepReminderStore } from "../../src/store/step-reminder-store.ts"
import * as StepReminderStoreSql from "../../src/store/step-reminder-store-sql.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"

const openAt = (location: string) =>
  Effect.flatMap(
    Layer.build(StepReminderStoreSql.layer.pipe(Layer.provideMerge(databaseLayerAt(location)))),
    (context) => Effect.provide(StepReminderStore, context)
  )

const reminder = (ordinal: 1 | 2 | 3, attemptId = "att-1") => ({
  runId: "run-1",
  nodeId: "implement",
  attemptId,
  requestId: "req-1",
  sessionId: "session-1",
  ordinal
})

describe("step reminders store", () => {
  it.scoped("a reminder is taken once, by the first of two connections", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const a = yield* openAt(location)
      const b = yield* openAt(location)
      const results = yield* Effect.all([a.take(reminder(1)), b.take(reminder(1))], { concurrency: 2 })
      expect(results.filter(Boolean)).toHaveLength(1)
      expect(yield* b.take(reminder(1))).toBe(false)
      expect(yield* a.take(reminder(2))).toBe(true)
      expect(yield* a.take(reminder(3))).toBe(true)
      const taken = yield* b.forAttempt("att-1")
      expect(taken.map((r) => r.ordinal)).toEqual([1, 2, 3])
      expect(taken[0]).toMatchObject({ runId: "run-1", nodeId: "implement", sessionId: "session-1" })
      // The notice (3) is not a reminder: the status counts only 1 and 2.
      yield* a.take(reminder(1, "att-2"))
      const counts = yield* a.countsForRun("run-1")
      expect(Object.fromEntries(counts)).toEqual({ "att-1": 2, "att-2": 1 })
    })
  )

  it.scoped("a bad ID is a typed error and stores nothing", () =>
    Effect.gen(function* () {
      const store = yield* openAt(yield* freshLocation)
      const error = yield* Effect.flip(store.take({ ...reminder(1), attemptId: "" }))
      expect(error._tag).toBe("InvalidInput")
      expect(yield* store.forAttempt("")).toEqual([])
    })
  )
})
