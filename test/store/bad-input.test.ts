/**
 * Every bad input gets a typed error and writes nothing: each case runs against a store holding a
 * claimed, an eligible and a resolved intent, and compares the table before and after.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type { FallbackFacts } from "../../src/domain/facts.ts"
import type { Cause, Resolution } from "../../src/domain/turn-intent.ts"
import type { TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"
import { sampleFacts, sampleIntent, unchecked } from "../support/fixtures.ts"
import { openStore, snapshotIntents } from "../support/store.ts"

interface Seeded {
  readonly claimed: string
  readonly eligible: string
  readonly resolved: string
}

const seed = (store: TurnIntentStoreService) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(Date.parse("2026-08-21T08:00:00.000Z"))
    const claimed = yield* store.ensure(sampleIntent({ sourceEventId: "e-claimed" }))
    yield* store.claimForRun({ runId: "run-1", targetSessionId: "session-1", token: "a", leaseMs: 60_000 })
    const eligible = yield* store.ensure(sampleIntent({ sourceEventId: "e-eligible", eligible: true }))
    const resolved = yield* store.ensure(sampleIntent({ sourceEventId: "e-resolved", runId: "run-2" }))
    yield* store.claimForRun({ runId: "run-2", targetSessionId: "session-1", token: "a", leaseMs: 60_000 })
    yield* store.resolve({ intentId: resolved.intentId, token: "a", resolution: "fallback", messageId: "m" })
    return {
      claimed: claimed.intentId,
      eligible: eligible.intentId,
      resolved: resolved.intentId
    } satisfies Seeded
  })

const empty = ""
const long = "x".repeat(513)
const badFacts = (value: unknown) => unchecked<FallbackFacts>(value)
const bigFacts = sampleFacts({ workflowName: "w".repeat(64 * 1024) })
const badLimits = [0, -1, 1001, 1.5, Number.NaN, Number.POSITIVE_INFINITY]
const badLeases = [0, -1, 1.5, Number.NaN, 60 * 60_000 + 1]

type Case = readonly [
  name: string,
  run: (
    store: TurnIntentStoreService,
    seeded: Seeded
  ) => Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>,
  tag: "InvalidInput" | "InvalidFacts",
  field?: string
]

const cases: ReadonlyArray<Case> = [
  // ensure
  ["ensure: oversized facts", (s) => s.ensure(sampleIntent({ facts: bigFacts })), "InvalidFacts"],
  [
    "ensure: over-long reason",
    (s) => s.ensure(sampleIntent({ facts: sampleFacts({ reason: "r".repeat(8193) }) })),
    "InvalidFacts"
  ],
  [
    "ensure: unknown facts field",
    (s) => s.ensure(sampleIntent({ facts: badFacts({ ...sampleFacts(), env: "HOME=/root" }) })),
    "InvalidFacts"
  ],
  [
    "ensure: wrong facts schema",
    (s) => s.ensure(sampleIntent({ facts: badFacts({ ...sampleFacts(), schema: "v0" }) })),
    "InvalidFacts"
  ],
  [
    "ensure: facts not an object",
    (s) => s.ensure(sampleIntent({ facts: badFacts("facts") })),
    "InvalidFacts"
  ],
  [
    "ensure: empty sourceEventId",
    (s) => s.ensure(sampleIntent({ sourceEventId: empty })),
    "InvalidInput",
    "sourceEventId"
  ],
  ["ensure: empty runId", (s) => s.ensure(sampleIntent({ runId: empty })), "InvalidInput", "runId"],
  [
    "ensure: empty workflowRef",
    (s) => s.ensure(sampleIntent({ workflowRef: empty })),
    "InvalidInput",
    "workflowRef"
  ],
  [
    "ensure: 513-char workflowRef",
    (s) => s.ensure(sampleIntent({ workflowRef: long })),
    "InvalidInput",
    "workflowRef"
  ],
  [
    "ensure: 513-char targetSessionId",
    (s) => s.ensure(sampleIntent({ targetSessionId: long })),
    "InvalidInput",
    "targetSessionId"
  ],
  [
    "ensure: 513-char sourceEventId",
    (s) => s.ensure(sampleIntent({ sourceEventId: long })),
    "InvalidInput",
    "sourceEventId"
  ],
  ["ensure: empty nodeId", (s) => s.ensure(sampleIntent({ nodeId: empty })), "InvalidInput", "nodeId"],
  [
    "ensure: 513-char attemptId",
    (s) => s.ensure(sampleIntent({ attemptId: long })),
    "InvalidInput",
    "attemptId"
  ],
  [
    "ensure: unknown cause",
    (s) => s.ensure(sampleIntent({ cause: unchecked<Cause>("userEscape") })),
    "InvalidInput",
    "cause"
  ],
  // get
  ["get: empty ID", (s) => s.get(empty), "InvalidInput", "intentId"],
  ["get: 513-char ID", (s) => s.get(long), "InvalidInput", "intentId"],
  // claimForRun
  ...badLeases.map(
    (leaseMs): Case => [
      `claimForRun: leaseMs ${leaseMs}`,
      (s) => s.claimForRun({ runId: "run-1", targetSessionId: "session-1", token: "b", leaseMs }),
      "InvalidInput",
      "leaseMs"
    ]
  ),
  [
    "claimForRun: empty token",
    (s) => s.claimForRun({ runId: "run-1", targetSessionId: "session-1", token: empty, leaseMs: 1 }),
    "InvalidInput",
    "token"
  ],
  [
    "claimForRun: 513-char token",
    (s) => s.claimForRun({ runId: "run-1", targetSessionId: "session-1", token: long, leaseMs: 1 }),
    "InvalidInput",
    "token"
  ],
  [
    "claimForRun: empty runId",
    (s) => s.claimForRun({ runId: empty, targetSessionId: "session-1", token: "b", leaseMs: 1 }),
    "InvalidInput",
    "runId"
  ],
  [
    "claimForRun: 513-char session",
    (s) => s.claimForRun({ runId: "run-1", targetSessionId: long, token: "b", leaseMs: 1 }),
    "InvalidInput",
    "targetSessionId"
  ],
  // claimEligibleForSession
  ...badLimits.map(
    (limit): Case => [
      `claimEligibleForSession: limit ${limit}`,
      (s) => s.claimEligibleForSession({ targetSessionId: "session-1", token: "b", leaseMs: 1_000, limit }),
      "InvalidInput",
      "limit"
    ]
  ),
  ...badLeases.map(
    (leaseMs): Case => [
      `claimEligibleForSession: leaseMs ${leaseMs}`,
      (s) => s.claimEligibleForSession({ targetSessionId: "session-1", token: "b", leaseMs, limit: 5 }),
      "InvalidInput",
      "leaseMs"
    ]
  ),
  [
    "claimEligibleForSession: empty session",
    (s) => s.claimEligibleForSession({ targetSessionId: empty, token: "b", leaseMs: 1, limit: 5 }),
    "InvalidInput",
    "targetSessionId"
  ],
  [
    "claimEligibleForSession: empty token",
    (s) => s.claimEligibleForSession({ targetSessionId: "session-1", token: empty, leaseMs: 1, limit: 5 }),
    "InvalidInput",
    "token"
  ],
  // makeEligible
  ["makeEligible: empty ID", (s) => s.makeEligible({ intentId: empty }), "InvalidInput", "intentId"],
  ["makeEligible: 513-char ID", (s) => s.makeEligible({ intentId: long }), "InvalidInput", "intentId"],
  [
    "makeEligible: oversized facts",
    (s, d) => s.makeEligible({ intentId: d.claimed, facts: bigFacts }),
    "InvalidFacts"
  ],
  [
    "makeEligible: unknown facts field",
    (s, d) => s.makeEligible({ intentId: d.claimed, facts: badFacts({ ...sampleFacts(), x: 1 }) }),
    "InvalidFacts"
  ],
  [
    "makeEligible: missing handoff",
    (s, d) =>
      s.makeEligible({ intentId: d.eligible, facts: badFacts({ ...sampleFacts(), handoff: undefined }) }),
    "InvalidFacts"
  ],
  // resolve
  [
    "resolve: bad resolution",
    (s, d) =>
      s.resolve({
        intentId: d.claimed,
        token: "a",
        resolution: unchecked<Resolution>("retry"),
        messageId: "m"
      }),
    "InvalidInput",
    "resolution"
  ],
  [
    "resolve: empty messageId",
    (s, d) => s.resolve({ intentId: d.claimed, token: "a", resolution: "fallback", messageId: empty }),
    "InvalidInput",
    "messageId"
  ],
  [
    "resolve: 513-char messageId",
    (s, d) => s.resolve({ intentId: d.claimed, token: "a", resolution: "fallback", messageId: long }),
    "InvalidInput",
    "messageId"
  ],
  [
    "resolve: empty token",
    (s, d) => s.resolve({ intentId: d.claimed, token: empty, resolution: "fallback", messageId: "m" }),
    "InvalidInput",
    "token"
  ],
  [
    "resolve: empty ID",
    (s) => s.resolve({ intentId: empty, token: "a", resolution: "fallback", messageId: "m" }),
    "InvalidInput",
    "intentId"
  ],
  // release
  [
    "release: empty token",
    (s, d) => s.release({ intentId: d.claimed, token: empty }),
    "InvalidInput",
    "token"
  ],
  ["release: 513-char ID", (s) => s.release({ intentId: long, token: "a" }), "InvalidInput", "intentId"],
  // list
  ...badLimits.map(
    (limit): Case => [`list: limit ${limit}`, (s) => s.list({ limit }), "InvalidInput", "limit"]
  ),
  [
    "list: empty session filter",
    (s) => s.list({ targetSessionId: empty, limit: 5 }),
    "InvalidInput",
    "targetSessionId"
  ],
  ["list: 513-char run filter", (s) => s.list({ runId: long, limit: 5 }), "InvalidInput", "runId"],
  [
    "list: unknown state",
    (s) => s.list({ state: unchecked<"all">("open"), limit: 5 }),
    "InvalidInput",
    "state"
  ]
]

describe("bad inputs", () => {
  it.scoped.each(cases)("%s → typed error, nothing written", ([, run, tag, field]) =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const seeded = yield* seed(store)
      // Later than every lease: a write that slipped through validation would show in the table.
      yield* TestClock.adjust("2 hours")
      const before = yield* snapshotIntents(path)
      expect(before).toHaveLength(3)
      const error = yield* Effect.flip(run(store, seeded))
      expect(error._tag).toBe(tag)
      if (field !== undefined) expect(error).toMatchObject({ field })
      expect(error.message.length).toBeGreaterThan(0)
      expect(yield* snapshotIntents(path)).toEqual(before)
    })
  )
})
