import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import type { Resolution } from "../../src/domain/turn-intent.ts"
import { sampleFacts, sampleIntent } from "../support/fixtures.ts"
import { openStore, snapshotIntents } from "../support/store.ts"

const T0 = Date.parse("2026-08-21T08:00:00.000Z")
const run1 = { runId: "run-1", targetSessionId: "session-1" }

describe("makeEligible", () => {
  it.scoped("sets eligibleAt once; a later call keeps the first time", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store } = yield* openStore()
      const created = yield* store.ensure(sampleIntent())
      yield* TestClock.adjust("3 seconds")
      const eligible = yield* store.makeEligible({ intentId: created.intentId })
      expect(eligible).toEqual({ ...created, eligibleAt: "2026-08-21T08:00:03.000Z" })
      yield* TestClock.adjust("1 minute")
      expect(yield* store.makeEligible({ intentId: created.intentId })).toEqual(eligible)
    })
  )

  it.scoped("refreshes the facts, also on an intent that is already eligible", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store } = yield* openStore()
      const created = yield* store.ensure(sampleIntent({ eligible: true }))
      yield* TestClock.adjust("1 minute")
      const terminal = sampleFacts({ observedState: "failed", reason: "terminal timeout", handoff: false })
      const refreshed = yield* store.makeEligible({ intentId: created.intentId, facts: terminal })
      expect(refreshed).toEqual({ ...created, facts: terminal })
      expect(Option.getOrThrow(yield* store.get(created.intentId)).facts).toEqual(terminal)
    })
  )

  it.scoped("keeps an existing claim: eligibility does not steal work from a claimant", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const created = yield* store.ensure(sampleIntent())
      const claimed = Option.getOrThrow(yield* store.claimForRun({ ...run1, token: "a", leaseMs: 60_000 }))
      const eligible = yield* store.makeEligible({ intentId: created.intentId })
      expect(eligible.deliveryClaimToken).toBe("a")
      expect(eligible.deliveryClaimExpiresAt).toBe(claimed.deliveryClaimExpiresAt)
    })
  )

  it.scoped("returns a resolved intent unchanged, even with new facts", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const created = yield* store.ensure(sampleIntent())
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 60_000 })
      const resolved = yield* store.resolve({
        intentId: created.intentId,
        token: "a",
        resolution: "workflowPrompt",
        messageId: "m-1"
      })
      const rows = yield* snapshotIntents(path)
      const result = yield* store.makeEligible({
        intentId: created.intentId,
        facts: sampleFacts({ reason: "late" })
      })
      expect(result).toEqual(resolved)
      expect(result.eligibleAt).toBeNull()
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )

  it.scoped("fails with IntentNotFound for an unknown ID and writes nothing", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      yield* store.ensure(sampleIntent())
      const rows = yield* snapshotIntents(path)
      const error = yield* Effect.flip(
        store.makeEligible({ intentId: "deferred-turn:missing", facts: sampleFacts() })
      )
      expect(error._tag).toBe("IntentNotFound")
      expect(error.message).toBe("turn intent deferred-turn:missing does not exist")
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )
})

describe("resolve", () => {
  it.scoped("with the live claim sets resolvedAt, resolution and message ID together", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store } = yield* openStore()
      const created = yield* store.ensure(sampleIntent())
      const claimed = Option.getOrThrow(yield* store.claimForRun({ ...run1, token: "a", leaseMs: 60_000 }))
      yield* TestClock.adjust("2 seconds")
      const resolved = yield* store.resolve({
        intentId: created.intentId,
        token: "a",
        resolution: "presentation",
        messageId: "turn-message:1"
      })
      expect(resolved).toEqual({
        ...claimed,
        resolvedAt: "2026-08-21T08:00:02.000Z",
        resolution: "presentation",
        resolutionMessageId: "turn-message:1"
      })
      expect(yield* store.get(created.intentId)).toEqual(Option.some(resolved))
    })
  )

  it.scoped.each(["workflowPrompt", "presentation", "fallback"] as const)(
    "accepts the %s resolution",
    (resolution: Resolution) =>
      Effect.gen(function* () {
        const { store } = yield* openStore()
        const created = yield* store.ensure(sampleIntent({ eligible: true }))
        yield* store.claimEligibleForSession({
          targetSessionId: "session-1",
          token: "t",
          leaseMs: 1_000,
          limit: 1
        })
        const resolved = yield* store.resolve({
          intentId: created.intentId,
          token: "t",
          resolution,
          messageId: "m"
        })
        expect(resolved.resolution).toBe(resolution)
      })
  )

  it.scoped("fails with ClaimNotHeld and the reason, changing nothing", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store, path } = yield* openStore()
      const notClaimed = yield* store.ensure(sampleIntent({ runId: "r-none" }))
      const other = yield* store.ensure(sampleIntent({ runId: "r-other" }))
      const expired = yield* store.ensure(sampleIntent({ runId: "r-expired" }))
      const released = yield* store.ensure(sampleIntent({ runId: "r-released" }))
      const done = yield* store.ensure(sampleIntent({ runId: "r-done" }))
      const claim = (runId: string, token: string, leaseMs: number) =>
        store.claimForRun({ runId, targetSessionId: "session-1", token, leaseMs })
      yield* claim("r-other", "b", 60_000)
      yield* claim("r-expired", "a", 1_000)
      yield* claim("r-released", "a", 60_000)
      yield* store.release({ intentId: released.intentId, token: "a" })
      yield* claim("r-done", "a", 60_000)
      yield* store.resolve({ intentId: done.intentId, token: "a", resolution: "fallback", messageId: "m-0" })
      yield* TestClock.adjust("1 second")
      const rows = yield* snapshotIntents(path)

      const attempt = (intentId: string) =>
        Effect.flip(store.resolve({ intentId, token: "a", resolution: "workflowPrompt", messageId: "m-1" }))
      const cases = [
        [notClaimed.intentId, "notClaimed"],
        [other.intentId, "otherClaimant"],
        [expired.intentId, "expired"],
        [released.intentId, "notClaimed"],
        [done.intentId, "resolved"]
      ] as const
      for (const [intentId, reason] of cases) {
        const error = yield* attempt(intentId)
        expect(error._tag).toBe("ClaimNotHeld")
        if (error._tag !== "ClaimNotHeld") continue
        expect(error.reason).toBe(reason)
        expect(error.message).toBe(`claim on turn intent ${intentId} is not held (${reason})`)
      }
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )

  it.scoped("lets only one of two claimants resolve, however their calls interleave", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const created = yield* store.ensure(sampleIntent({ eligible: true }))
      yield* store.claimForRun({ ...run1, token: "natural", leaseMs: 1_000 })
      yield* TestClock.adjust("1 second")
      // The natural claim expired; fallback takes over and resolves.
      yield* store.claimEligibleForSession({
        targetSessionId: "session-1",
        token: "fallback",
        leaseMs: 1_000,
        limit: 5
      })
      const attempts = yield* Effect.all(
        [
          store.resolve({
            intentId: created.intentId,
            token: "natural",
            resolution: "workflowPrompt",
            messageId: "a"
          }),
          store.resolve({
            intentId: created.intentId,
            token: "fallback",
            resolution: "fallback",
            messageId: "b"
          })
        ].map(Effect.either),
        { concurrency: "unbounded" }
      )
      expect(attempts.filter((result) => result._tag === "Right")).toHaveLength(1)
      expect(Option.getOrThrow(yield* store.get(created.intentId)).resolution).toBe("fallback")
    })
  )

  it.scoped("fails with IntentNotFound for an unknown ID", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const error = yield* Effect.flip(
        store.resolve({
          intentId: "deferred-turn:missing",
          token: "a",
          resolution: "fallback",
          messageId: "m"
        })
      )
      expect(error._tag).toBe("IntentNotFound")
    })
  )
})
