import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import type { TurnIntent } from "../../src/domain/turn-intent.ts"
import type { TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { openStore, snapshotIntents } from "../support/store.ts"

const T0 = Date.parse("2026-08-21T08:00:00.000Z")
const run1 = { runId: "run-1", targetSessionId: "session-1" }

const idOf = (claimed: Option.Option<TurnIntent>) =>
  Option.match(claimed, { onNone: () => "none", onSome: (intent) => intent.intentId })

/** Three intents of run-1/session-1, one second apart, plus neighbours that must never be picked. */
const seedRun = (store: TurnIntentStoreService) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const oldest = yield* store.ensure(sampleIntent({ sourceEventId: "e-1" }))
    yield* TestClock.adjust("1 second")
    const middle = yield* store.ensure(sampleIntent({ sourceEventId: "e-2", eligible: true }))
    yield* TestClock.adjust("1 second")
    const newest = yield* store.ensure(sampleIntent({ sourceEventId: "e-3" }))
    yield* store.ensure(sampleIntent({ sourceEventId: "e-0", targetSessionId: "session-2" }))
    yield* store.ensure(sampleIntent({ sourceEventId: "e-0", runId: "run-2" }))
    return { oldest, middle, newest }
  })

describe("claimForRun", () => {
  it.scoped("claims the oldest pending intent of the run and session, eligible or not", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { oldest } = yield* seedRun(store)
      const now = yield* TestClock.currentTimeMillis
      const claimed = yield* store.claimForRun({ ...run1, token: "a", leaseMs: 30_000 })
      expect(claimed).toEqual(
        Option.some({ ...oldest, deliveryClaimToken: "a", deliveryClaimExpiresAt: now + 30_000 })
      )
    })
  )

  it.scoped("skips live claims of others and returns None when all are held", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { oldest, middle, newest } = yield* seedRun(store)
      const claim = (token: string) => store.claimForRun({ ...run1, token, leaseMs: 30_000 })
      expect(idOf(yield* claim("a"))).toBe(oldest.intentId)
      expect(idOf(yield* claim("b"))).toBe(middle.intentId)
      expect(idOf(yield* claim("c"))).toBe(newest.intentId)
      expect(yield* claim("d")).toEqual(Option.none())
    })
  )

  it.scoped("lets the same token claim again, extending its lease", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { oldest } = yield* seedRun(store)
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 1_000 })
      yield* TestClock.adjust("500 millis")
      const again = yield* store.claimForRun({ ...run1, token: "a", leaseMs: 1_000 })
      expect(idOf(again)).toBe(oldest.intentId)
      expect(Option.getOrThrow(again).deliveryClaimExpiresAt).toBe(
        (yield* TestClock.currentTimeMillis) + 1_000
      )
    })
  )

  it.scoped("hands an expired claim to another claimant exactly at expiry", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { oldest } = yield* seedRun(store)
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 1_000 })
      yield* store.claimForRun({ ...run1, token: "b", leaseMs: 60_000 })
      yield* store.claimForRun({ ...run1, token: "c", leaseMs: 60_000 })
      yield* TestClock.adjust("999 millis")
      expect(yield* store.claimForRun({ ...run1, token: "d", leaseMs: 1_000 })).toEqual(Option.none())
      yield* TestClock.adjust("1 millis")
      expect(idOf(yield* store.claimForRun({ ...run1, token: "d", leaseMs: 1_000 }))).toBe(oldest.intentId)
      // The old holder lost it: it can neither resolve nor release.
      const lost = yield* Effect.flip(
        store.resolve({ intentId: oldest.intentId, token: "a", resolution: "workflowPrompt", messageId: "m" })
      )
      expect(lost._tag === "ClaimNotHeld" && lost.reason).toBe("otherClaimant")
      expect(yield* store.release({ intentId: oldest.intentId, token: "a" })).toBe(false)
    })
  )

  it.scoped("never returns a resolved intent", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { oldest, middle } = yield* seedRun(store)
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 1_000 })
      yield* store.resolve({
        intentId: oldest.intentId,
        token: "a",
        resolution: "presentation",
        messageId: "m"
      })
      // Even the token that resolved it moves on to the next pending intent.
      expect(idOf(yield* store.claimForRun({ ...run1, token: "a", leaseMs: 1_000 }))).toBe(middle.intentId)
    })
  )

  it.scoped("returns None for a run or session without pending intents and writes nothing", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      yield* seedRun(store)
      const rows = yield* snapshotIntents(path)
      const none = { token: "a", leaseMs: 1_000 }
      expect(yield* store.claimForRun({ runId: "run-9", targetSessionId: "session-1", ...none })).toEqual(
        Option.none()
      )
      expect(yield* store.claimForRun({ runId: "run-2", targetSessionId: "session-2", ...none })).toEqual(
        Option.none()
      )
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )
})

describe("claimEligibleForSession", () => {
  /** A session with every kind of intent; only `expected` may ever be claimed by a newcomer. */
  const seedSession = (store: TurnIntentStoreService) =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      // One run per intent, so a run claim can target each one precisely.
      const ensure = (name: string, extra: { eligible?: boolean; targetSessionId?: string } = {}) =>
        store.ensure(sampleIntent({ sourceEventId: name, runId: name, ...extra }))
      const hold = (name: string, token: string, leaseMs: number) =>
        store.claimForRun({ runId: name, targetSessionId: "session-1", token, leaseMs })
      yield* ensure("ineligible")
      const free = yield* ensure("free", { eligible: true })
      yield* ensure("live", { eligible: true })
      const expired = yield* ensure("expired", { eligible: true })
      const resolved = yield* ensure("resolved", { eligible: true })
      yield* ensure("elsewhere", { eligible: true, targetSessionId: "session-2" })
      yield* hold("live", "other", 60_000)
      yield* hold("expired", "stale", 1_000)
      yield* hold("resolved", "done", 60_000)
      yield* store.resolve({
        intentId: resolved.intentId,
        token: "done",
        resolution: "fallback",
        messageId: "m"
      })
      yield* TestClock.adjust("2 seconds")
      return { expected: [free.intentId, expired.intentId].sort() }
    })

  it.scoped("claims only eligible, pending intents that are unclaimed or whose claim expired", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { expected } = yield* seedSession(store)
      const now = yield* TestClock.currentTimeMillis
      const claimed = yield* store.claimEligibleForSession({
        targetSessionId: "session-1",
        token: "sync",
        leaseMs: 5_000,
        limit: 100
      })
      expect(claimed.map((intent) => intent.intentId).sort()).toEqual(expected)
      for (const intent of claimed) {
        expect(intent.deliveryClaimToken).toBe("sync")
        expect(intent.deliveryClaimExpiresAt).toBe(now + 5_000)
      }
      // Nothing left for anyone else now.
      const next = { targetSessionId: "session-1", token: "other-sync", leaseMs: 5_000, limit: 100 }
      expect(yield* store.claimEligibleForSession(next)).toEqual([])
      // The same token gets its own claims back (a retried sync pass).
      const retried = yield* store.claimEligibleForSession({ ...next, token: "sync" })
      expect(retried.map((intent) => intent.intentId).sort()).toEqual(expected)
    })
  )

  it.scoped("orders by eligibility time, then intent ID, and honours the limit", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const { store } = yield* openStore()
      const ids: Array<string> = []
      for (let i = 0; i < 6; i++)
        ids.push((yield* store.ensure(sampleIntent({ sourceEventId: `e-${i}` }))).intentId)
      // Eligibility in reverse request order; e-0 and e-1 share an eligibility instant.
      yield* TestClock.adjust("1 second")
      for (const index of [5, 4, 3]) {
        yield* store.makeEligible({ intentId: ids[index] ?? "" })
        yield* TestClock.adjust("1 second")
      }
      yield* store.makeEligible({ intentId: ids[1] ?? "" })
      yield* store.makeEligible({ intentId: ids[0] ?? "" })
      const tied = [ids[0] ?? "", ids[1] ?? ""].sort()
      const expected = [ids[5], ids[4], ids[3], ...tied]

      const claim = (token: string, limit: number) =>
        store.claimEligibleForSession({ targetSessionId: "session-1", token, leaseMs: 10_000, limit })
      const first = yield* claim("a", 2)
      const second = yield* claim("b", 2)
      const third = yield* claim("c", 2)
      expect([...first, ...second, ...third].map((intent) => intent.intentId)).toEqual(expected)
      expect([first.length, second.length, third.length]).toEqual([2, 2, 1])
      // e-2 was never made eligible.
      expect(expected).not.toContain(ids[2])
    })
  )
})

describe("release", () => {
  it.scoped("drops the holder's claim so another claimant can take the intent", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { oldest } = yield* seedRun(store)
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 60_000 })
      expect(yield* store.release({ intentId: oldest.intentId, token: "a" })).toBe(true)
      expect(Option.getOrThrow(yield* store.get(oldest.intentId))).toEqual(oldest)
      expect(idOf(yield* store.claimForRun({ ...run1, token: "b", leaseMs: 60_000 }))).toBe(oldest.intentId)
    })
  )

  it.scoped("returns false and changes nothing for anyone but the holder", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const { oldest } = yield* seedRun(store)
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 60_000 })
      const rows = yield* snapshotIntents(path)
      expect(yield* store.release({ intentId: oldest.intentId, token: "b" })).toBe(false)
      expect(yield* store.release({ intentId: "deferred-turn:unknown", token: "a" })).toBe(false)
      expect(yield* snapshotIntents(path)).toEqual(rows)
      // Releasing twice: the second call no longer holds anything.
      expect(yield* store.release({ intentId: oldest.intentId, token: "a" })).toBe(true)
      expect(yield* store.release({ intentId: oldest.intentId, token: "a" })).toBe(false)
    })
  )

  it.scoped("returns false on a resolved intent and leaves it untouched", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const { oldest } = yield* seedRun(store)
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 60_000 })
      yield* store.resolve({ intentId: oldest.intentId, token: "a", resolution: "fallback", messageId: "m" })
      const rows = yield* snapshotIntents(path)
      expect(yield* store.release({ intentId: oldest.intentId, token: "a" })).toBe(false)
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )

  it.scoped("clears the caller's own expired claim when nobody took it over", () =>
    Effect.gen(function* () {
      const { store } = yield* openStore()
      const { oldest } = yield* seedRun(store)
      yield* store.claimForRun({ ...run1, token: "a", leaseMs: 1_000 })
      yield* TestClock.adjust("5 seconds")
      expect(yield* store.release({ intentId: oldest.intentId, token: "a" })).toBe(true)
      expect(Option.getOrThrow(yield* store.get(oldest.intentId)).deliveryClaimToken).toBeNull()
    })
  )
})
