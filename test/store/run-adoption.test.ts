/**
 * `RunStore.adopt` on a real database (SQLite here, PostgreSQL in the `postgres` project): the run,
 * its pending intents of the old session (re-keyed under the ID the new session derives) and its
 * undelivered notifications move in one transaction with the takeover's claim, and an `adopted`
 * event records it; every refusal changes nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, TestClock } from "effect"
import { intentId } from "../../src/domain/identity.ts"
import { NOTIFICATION_SCHEMA, NotificationStore } from "../../src/store/notification-store.ts"
import * as NotificationStoreSql from "../../src/store/notification-store-sql.ts"
import { RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../../src/store/turn-intent-store-sql.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"
import { sampleFacts, sampleIntent, sampleRun } from "../support/fixtures.ts"

const openStores = (location: string) =>
  Effect.map(
    Layer.build(
      Layer.mergeAll(RunStoreSql.layer, TurnIntentStoreSql.layer, NotificationStoreSql.layer).pipe(
        Layer.provideMerge(databaseLayerAt(location))
      )
    ),
    (context) => ({
      runs: Context.get(context, RunStore),
      intents: Context.get(context, TurnIntentStore),
      notifications: Context.get(context, NotificationStore)
    })
  )

type Stores = Effect.Effect.Success<ReturnType<typeof openStores>>

/** Run r1 of session s1, running under claim `t1` (lease 1 s), with what it owes s1. */
const ownedRun = ({ runs, intents, notifications }: Stores) =>
  Effect.gen(function* () {
    yield* runs.reserve(sampleRun("r1", { targetSessionId: "s1" }))
    yield* runs.claim({ runId: "r1", token: "t1", leaseMs: 1_000, mode: "activate" })
    const facts = sampleFacts({ runId: "r1", observedState: "running", cause: "timedOut" })
    // An earlier interruption already answered in s1: its resolution stays there.
    const answered = yield* intents.ensure(
      sampleIntent({
        runId: "r1",
        targetSessionId: "s1",
        sourceEventId: "ev-0",
        attemptId: "attempt-0",
        facts
      })
    )
    yield* intents.claimForRun({ runId: "r1", targetSessionId: "s1", token: "c0", leaseMs: 1_000 })
    yield* intents.resolve({
      intentId: answered.intentId,
      token: "c0",
      resolution: "workflowPrompt",
      messageId: "m0"
    })
    // A timeout whose recovery prompt has not gone out (pending, not eligible) and a handoff (eligible).
    const timedOut = yield* intents.ensure(
      sampleIntent({ runId: "r1", targetSessionId: "s1", sourceEventId: "ev-1", cause: "timedOut", facts })
    )
    // Stored a moment later: listings order by the time an intent was requested.
    yield* TestClock.adjust("1 millis")
    const handoff = yield* intents.ensure(
      sampleIntent({
        ...{ runId: "r1", targetSessionId: "s1", sourceEventId: "ev-2", cause: "controllerInterrupted" },
        ...{ attemptId: "attempt-2", eligible: true, facts: { ...facts, cause: "controllerInterrupted" } }
      })
    )
    yield* notifications.insert({
      notificationId: "n1",
      runId: "r1",
      targetSessionId: "s1",
      payload: {
        schema: NOTIFICATION_SCHEMA,
        kind: "progress",
        workflowName: "demo",
        text: "half way",
        nodeId: "first",
        attemptId: "attempt-1"
      }
    })
    return { timedOut, handoff, answered }
  })

describe("RunStore.adopt", () => {
  it.scoped(
    "moves the run with its pending intents and notifications to the session, records it, claims it",
    () =>
      Effect.gen(function* () {
        const stores = yield* openStores(yield* freshLocation)
        const { runs, intents, notifications } = stores
        const { timedOut, handoff, answered } = yield* ownedRun(stores)
        // While s1's runner holds a live claim: refused, nothing moves.
        const held = yield* Effect.flip(
          runs.adopt({ runId: "r1", token: "t2", leaseMs: 1_000, sessionId: "s2" })
        )
        expect(held._tag === "ClaimRefused" && held.reason).toBe("held")
        expect(Option.getOrThrow(yield* runs.get("r1")).targetSessionId).toBe("s1")
        expect(yield* intents.list({ targetSessionId: "s2", limit: 10 })).toEqual([])

        yield* TestClock.adjust("2 seconds")
        const { run, adoption } = yield* runs.adopt({
          runId: "r1",
          token: "t2",
          leaseMs: 1_000,
          sessionId: "s2"
        })
        expect([run.targetSessionId, run.state, run.claimToken, run.claims]).toEqual([
          "s2",
          "running",
          "t2",
          2
        ])
        const rekeyed = (intent: typeof timedOut) => intentId({ ...intent, targetSessionId: "s2" })
        expect(adoption).toEqual({
          fromSessionId: "s1",
          toSessionId: "s2",
          intents: [
            { from: timedOut.intentId, to: yield* rekeyed(timedOut) },
            { from: handoff.intentId, to: yield* rekeyed(handoff) }
          ],
          notifications: 1
        })
        // Nothing of the run is owed to s1 any more; s2 owes the same interruptions, as they were.
        expect(yield* intents.list({ targetSessionId: "s1", state: "pending", limit: 10 })).toEqual([])
        const moved = yield* intents.list({ targetSessionId: "s2", state: "pending", limit: 10 })
        const shape = (i: typeof timedOut) => [i.sourceEventId, i.cause, i.eligibleAt, i.requestedAt, i.facts]
        expect(moved.map(shape)).toEqual([timedOut, handoff].map(shape))
        expect(
          yield* intents.claimEligibleForSession({
            targetSessionId: "s1",
            limit: 16,
            token: "c1",
            leaseMs: 1_000
          })
        ).toEqual([])
        const kept = Option.getOrThrow(yield* intents.get(answered.intentId))
        expect([kept.targetSessionId, kept.resolution]).toEqual(["s1", "workflowPrompt"])
        // The same interruption ensured for the new session is the moved intent, never a second one.
        const again = yield* intents.ensure(
          sampleIntent({
            ...{ runId: "r1", targetSessionId: "s2", sourceEventId: "ev-1", cause: "timedOut" },
            facts: timedOut.facts
          })
        )
        expect(again.intentId).toBe(yield* rekeyed(timedOut))
        expect(yield* intents.list({ runId: "r1", state: "pending", limit: 10 })).toHaveLength(2)
        // s2's natural delivery finds them; s1's finds nothing.
        expect(
          yield* intents.claimForRun({ runId: "r1", targetSessionId: "s1", token: "c2", leaseMs: 1_000 })
        ).toEqual(Option.none())
        const claimed = yield* intents.claimForRun({
          runId: "r1",
          targetSessionId: "s2",
          token: "c3",
          leaseMs: 1_000
        })
        expect(Option.isSome(claimed) && claimed.value.targetSessionId).toBe("s2")
        expect(yield* notifications.takePending({ targetSessionId: "s1", limit: 10 })).toEqual([])
        expect(
          (yield* notifications.takePending({ targetSessionId: "s2", limit: 10 })).map(
            (n) => n.notificationId
          )
        ).toEqual(["n1"])
        const events = yield* runs.events("r1")
        expect(events.map((e) => [e.kind, e.adoption])).toEqual([["adopted", adoption]])
        // The old owner's writes are fenced out.
        const lost = yield* Effect.flip(runs.renew({ runId: "r1", token: "t1" }, 1_000))
        expect(lost._tag).toBe("ClaimLost")
      })
  )

  it.scoped(
    "refuses an ended run, a session with a run of its own, and a delivery in flight; changes nothing",
    () =>
      Effect.gen(function* () {
        const stores = yield* openStores(yield* freshLocation)
        const { runs, intents } = stores
        const { timedOut } = yield* ownedRun(stores)
        yield* TestClock.adjust("2 seconds")
        const adopt = (sessionId: string) =>
          Effect.flip(runs.adopt({ runId: "r1", token: "t2", leaseMs: 1_000, sessionId }))
        // s3 has a queued run of its own: one active run per session.
        yield* runs.reserve(sampleRun("r3", { targetSessionId: "s3" }))
        const busy = yield* adopt("s3")
        expect(busy._tag === "ReservationConflict" && [busy.sessionId, busy.runId]).toEqual(["s3", "r3"])
        // A delivery of the run's successor is in flight in s1.
        const inFlight = Option.getOrThrow(
          yield* intents.claimForRun({ runId: "r1", targetSessionId: "s1", token: "c1", leaseMs: 5_000 })
        )
        const delivering = yield* adopt("s2")
        expect(delivering._tag === "ClaimRefused" && delivering.reason).toBe("delivering")
        const unchanged = Option.getOrThrow(yield* runs.get("r1"))
        expect([unchanged.targetSessionId, unchanged.claimToken]).toEqual(["s1", "t1"])
        expect(
          (yield* intents.list({ targetSessionId: "s1", state: "pending", limit: 10 })).map((i) => i.intentId)
        ).toContain(timedOut.intentId)
        expect(yield* runs.events("r1")).toEqual([])
        // Once that claim is gone, the adoption goes through; an ended run is refused.
        yield* intents.release({ intentId: inFlight.intentId, token: "c1" })
        yield* runs.adopt({ runId: "r1", token: "t2", leaseMs: 1_000, sessionId: "s2" })
        yield* TestClock.adjust("2 seconds")
        yield* runs.cancel("r1", "user")
        const ended = yield* Effect.flip(
          runs.adopt({ runId: "r1", token: "t3", leaseMs: 1_000, sessionId: "s4" })
        )
        expect(ended._tag === "ClaimRefused" && ended.reason).toBe("terminal")
        expect(Option.getOrThrow(yield* runs.get("r1")).targetSessionId).toBe("s2")
      })
  )

  it.scoped("a run that is the session's own is taken over as `claim` does, with no adoption", () =>
    Effect.gen(function* () {
      const stores = yield* openStores(yield* freshLocation)
      yield* ownedRun(stores)
      yield* TestClock.adjust("2 seconds")
      const same = yield* stores.runs.adopt({ runId: "r1", token: "t2", leaseMs: 1_000, sessionId: "s1" })
      expect([same.adoption, same.run.targetSessionId, same.run.claimToken]).toEqual([null, "s1", "t2"])
      expect(yield* stores.runs.events("r1")).toEqual([])
      expect(yield* stores.intents.list({ targetSessionId: "s1", state: "pending", limit: 10 })).toHaveLength(
        2
      )
    })
  )
})
