import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { intentId } from "../../src/domain/identity.ts"
import { sampleFacts, sampleIntent, unchecked } from "../support/fixtures.ts"
import { openStore, snapshotIntents } from "../support/store.ts"

const T0 = Date.parse("2026-08-21T08:00:00.000Z")

describe("ensure", () => {
  it.scoped("creates a pending, ineligible, unclaimed intent under its deterministic ID", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store } = yield* openStore()
      const input = sampleIntent()
      const intent = yield* store.ensure(input)
      expect(intent).toEqual({
        intentId: yield* intentId(input),
        sourceEventId: "source-event:1",
        runId: "run-1",
        workflowRef: "autoimplement",
        targetSessionId: "session-1",
        cause: "failed",
        nodeId: "build",
        attemptId: "attempt-1",
        facts: sampleFacts(),
        requestedAt: "2026-08-21T08:00:00.000Z",
        eligibleAt: null,
        resolvedAt: null,
        resolution: null,
        resolutionMessageId: null,
        deliveryClaimToken: null,
        deliveryClaimExpiresAt: null
      })
      expect(yield* store.get(intent.intentId)).toEqual(Option.some(intent))
    })
  )

  it.scoped("is idempotent when the immutable fields match, keeping the first record", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store, path } = yield* openStore()
      const first = yield* store.ensure(sampleIntent())
      const rows = yield* snapshotIntents(path)
      yield* TestClock.adjust("1 minute")
      // Mutable content (facts) may differ on a retry; the first record wins and nothing changes.
      const again = yield* store.ensure(sampleIntent({ facts: sampleFacts({ reason: "retry" }) }))
      expect(again).toEqual(first)
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )

  it.scoped("fails with IdentityCollision listing the differing fields, and changes nothing", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const first = yield* store.ensure(sampleIntent({ nodeId: null }))
      const rows = yield* snapshotIntents(path)
      // The ID covers session, run, source event, node (null = $launch), attempt and cause, so a
      // collision needs a different workflowRef or the $launch spelling of a null node.
      const ref = yield* Effect.flip(store.ensure(sampleIntent({ nodeId: null, workflowRef: "other" })))
      expect(ref._tag).toBe("IdentityCollision")
      if (ref._tag !== "IdentityCollision") return
      expect(ref.intentId).toBe(first.intentId)
      expect(ref.fields).toEqual(["workflowRef"])
      expect(ref.message).toBe(`turn intent ${first.intentId} already exists with different workflowRef`)

      const both = yield* Effect.flip(store.ensure(sampleIntent({ nodeId: "$launch", workflowRef: "other" })))
      expect(both._tag === "IdentityCollision" && both.fields).toEqual(["workflowRef", "nodeId"])
      expect(both.message).toContain("different workflowRef, nodeId")
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )

  it.scoped("creates an eligible intent when asked, eligible from its request time", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store } = yield* openStore()
      const intent = yield* store.ensure(sampleIntent({ eligible: true }))
      expect(intent.eligibleAt).toBe("2026-08-21T08:00:00.000Z")
      expect(intent.requestedAt).toBe(intent.eligibleAt)
    })
  )

  it.scoped("makes an existing ineligible intent eligible, once", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store } = yield* openStore()
      const created = yield* store.ensure(sampleIntent())
      yield* TestClock.adjust("5 seconds")
      const eligible = yield* store.ensure(sampleIntent({ eligible: true }))
      expect(eligible).toEqual({ ...created, eligibleAt: "2026-08-21T08:00:05.000Z" })
      yield* TestClock.adjust("5 seconds")
      expect(yield* store.ensure(sampleIntent({ eligible: true }))).toEqual(eligible)
      // Omitting `eligible` never takes eligibility away.
      expect(yield* store.ensure(sampleIntent())).toEqual(eligible)
    })
  )

  it.scoped("leaves a resolved intent as it is, even when asked for eligibility", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const created = yield* store.ensure(sampleIntent())
      yield* store.claimForRun({ runId: "run-1", targetSessionId: "session-1", token: "t", leaseMs: 1_000 })
      const resolved = yield* store.resolve({
        intentId: created.intentId,
        token: "t",
        resolution: "workflowPrompt",
        messageId: "m-1"
      })
      const rows = yield* snapshotIntents(path)
      expect(yield* store.ensure(sampleIntent({ eligible: true }))).toEqual(resolved)
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )

  it.scoped("validates facts before writing", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const error = yield* Effect.flip(
        store.ensure(sampleIntent({ facts: unchecked({ ...sampleFacts(), handoff: "yes" }) }))
      )
      expect(error._tag).toBe("InvalidFacts")
      expect(error.message).toContain("handoff: Expected boolean")
      expect(yield* snapshotIntents(path)).toEqual([])
    })
  )

  it.scoped("keeps distinct source events apart", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const a = yield* store.ensure(sampleIntent({ sourceEventId: "e-1" }))
      const b = yield* store.ensure(sampleIntent({ sourceEventId: "e-2" }))
      const c = yield* store.ensure(sampleIntent({ sourceEventId: "e-1", targetSessionId: "session-2" }))
      expect(new Set([a.intentId, b.intentId, c.intentId]).size).toBe(3)
      expect(yield* store.list({ limit: 10 })).toHaveLength(3)
    })
  )
})

describe("get", () => {
  it.scoped("returns None for an unknown ID and the stored record otherwise", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      expect(yield* store.get("deferred-turn:unknown")).toEqual(Option.none())
      const intent = yield* store.ensure(sampleIntent({ eligible: true }))
      expect(yield* store.get(intent.intentId)).toEqual(Option.some(intent))
    })
  )
})
