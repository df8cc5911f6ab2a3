/**
 * Lease renewal keeps a live runner's claim: a renewal whose store call dies (a driver throw,
 * a defect rather than a typed failure) must not end the renewals, or the run's lease runs out
 * under a runner that still holds it in memory, and nobody takes it over (sim seeds 747, 1058,
 * 2425: "still claimed past its lease").
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import { makeHarness } from "./support/harness.ts"

const waiting = {
  name: "waiting",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "answer", timeoutMs: null } },
  edges: []
}

describe("lease renewal", () => {
  it.scoped("a renewal that throws is logged; the next renewal extends the lease", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({
        definitions: [waiting],
        config: { leaseMs: 30_000, renewEveryMs: 10_000 },
        runStoreFaults: true
      })
      const faults = Option.getOrThrow(h.faults)
      const runId = yield* h.launch("waiting")
      yield* h.coordinator.take
      yield* faults.inject("renew", { _tag: "Throw" }, { times: 1 })
      // Well past the first lease: renewals went on after the one that died.
      for (let i = 0; i < 6; i++) yield* TestClock.adjust(10_000)
      const now = yield* Clock.currentTimeMillis
      const record = Option.getOrThrow(yield* h.store.get(runId))
      expect((yield* faults.fired).Throw).toBe(1)
      expect(record.state).toBe("running")
      expect(record.claimExpiresAt ?? 0).toBeGreaterThan(now)
    })
  )
})
