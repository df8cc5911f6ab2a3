import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Schema } from "effect"
import {
  checkId,
  type IntentKey,
  intentId,
  resolutionMessageId,
  type SourceEventKey,
  sourceEventId
} from "../../src/domain/identity.ts"
import { type Cause, LAUNCH_NODE, MAX_ID_LENGTH } from "../../src/domain/turn-intent.ts"
import { runNode } from "../support/node-child.ts"

const RUN = "20260821T081731Z-autoimplement-407480dd"
const launchKey: IntentKey = {
  targetSessionId: "session-1",
  runId: RUN,
  sourceEventId: "source-event:1",
  nodeId: null,
  attemptId: null,
  cause: "launchFailed"
}
const nodeKey: IntentKey = { ...launchKey, nodeId: "build", attemptId: "attempt-2", cause: "timedOut" }
const eventKey: SourceEventKey = {
  runId: RUN,
  nodeId: "build",
  attemptId: "attempt-2",
  cause: "timedOut",
  interruption: 3
}

// Pinned digests: if one of these changes, every stored intent would get a new ID after an upgrade,
// and a restart could create a second intent for the same source event.
const EXPECTED = {
  launch: "deferred-turn:1a9cc8cb9580bb29b35bdb4e015ceca7b1c83a5f47a5bb470f01278eec8730f2",
  node: "deferred-turn:3b5e59fa5a6505e93b5afb3859ac3b0aae534d7b3f236621aab25cdac53710b6",
  event: "source-event:c35f6afff99dcaaff9744f8d8634073934634618430b808aed1543569cd93be2",
  message: "turn-message:5920aad9984373ab239327dee7116526f1a248c69dbb03b17ea794ff37cfbf8f"
}

/** What test/support/print-identity.ts prints. */
const ProbeOutput = Schema.Struct({
  pid: Schema.Number,
  intents: Schema.Array(Schema.String),
  events: Schema.Array(Schema.String)
})

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runSync(Effect.either(effect))

describe("intent identity", () => {
  it.effect("is the pinned digest for fixed inputs", () =>
    Effect.gen(function* () {
      expect(yield* intentId(launchKey)).toBe(EXPECTED.launch)
      expect(yield* intentId(nodeKey)).toBe(EXPECTED.node)
      expect(yield* sourceEventId(eventKey)).toBe(EXPECTED.event)
      expect(resolutionMessageId("deferred-turn:abc", "fallback")).toBe(EXPECTED.message)
    })
  )

  it.effect("is stable across calls and key object shapes", () =>
    Effect.gen(function* () {
      const reordered: IntentKey = {
        cause: nodeKey.cause,
        attemptId: nodeKey.attemptId,
        nodeId: nodeKey.nodeId,
        sourceEventId: nodeKey.sourceEventId,
        runId: nodeKey.runId,
        targetSessionId: nodeKey.targetSessionId
      }
      expect(yield* intentId(reordered)).toBe(yield* intentId(nodeKey))
      expect(yield* intentId({ ...nodeKey })).toBe(EXPECTED.node)
    })
  )

  it("is the same in a separate Node process", async () => {
    const script = fileURLToPath(new URL("../support/print-identity.ts", import.meta.url))
    const payload = JSON.stringify({ intents: [launchKey, nodeKey], events: [eventKey] })
    const result = await runNode(script, [payload], process.cwd())
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    const child = Schema.decodeUnknownSync(Schema.parseJson(ProbeOutput))(result.stdout)
    expect(child.pid).not.toBe(process.pid)
    expect(child.intents).toEqual([EXPECTED.launch, EXPECTED.node])
    expect(child.events).toEqual([EXPECTED.event])
  })

  it.effect("uses $launch for a missing node, as the specification says", () =>
    Effect.gen(function* () {
      expect(yield* intentId({ ...launchKey, nodeId: LAUNCH_NODE })).toBe(yield* intentId(launchKey))
    })
  )

  it.effect("gives IDs within the store's 512-character key limit, even for maximal inputs", () =>
    Effect.gen(function* () {
      const long = "x".repeat(MAX_ID_LENGTH)
      const id = yield* intentId({
        targetSessionId: long,
        runId: long,
        sourceEventId: long,
        nodeId: long,
        attemptId: long,
        cause: "controllerInterrupted"
      })
      expect(id).toMatch(/^deferred-turn:[0-9a-f]{64}$/)
      expect(id.length).toBeLessThanOrEqual(MAX_ID_LENGTH)
      const event = yield* sourceEventId({
        runId: long,
        nodeId: long,
        attemptId: long,
        cause: "failed",
        interruption: 0
      })
      expect(event.length).toBeLessThanOrEqual(MAX_ID_LENGTH)
    })
  )

  const idFields = ["targetSessionId", "runId", "sourceEventId", "nodeId", "attemptId"] as const
  it.each(idFields)("rejects an empty or over-long %s with InvalidInput", (field) => {
    for (const value of ["", "x".repeat(MAX_ID_LENGTH + 1)]) {
      const result = run(intentId({ ...nodeKey, [field]: value }))
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left._tag).toBe("InvalidInput")
        expect(result.left.field).toBe(field)
        expect(result.left.message).toMatch(value === "" ? /non-empty/ : /at most 512 characters/)
      }
    }
    expect(Either.isRight(run(intentId({ ...nodeKey, [field]: "x".repeat(MAX_ID_LENGTH) })))).toBe(true)
  })

  it("rejects bad source-event keys with InvalidInput", () => {
    for (const [key, field] of [
      [{ ...eventKey, runId: "" }, "runId"],
      [{ ...eventKey, nodeId: "" }, "nodeId"],
      [{ ...eventKey, attemptId: "y".repeat(513) }, "attemptId"],
      [{ ...eventKey, interruption: -1 }, "interruption"],
      [{ ...eventKey, interruption: 1.5 }, "interruption"],
      [{ ...eventKey, interruption: Number.NaN }, "interruption"]
    ] as const) {
      const result = run(sourceEventId(key))
      expect(
        Either.isLeft(result) && result.left._tag === "InvalidInput" && result.left.field === field
      ).toBe(true)
    }
  })

  it("checks single IDs the same way", () => {
    expect(run(checkId("token", "t"))).toEqual(Either.right("t"))
    const empty = run(checkId("token", ""))
    expect(Either.isLeft(empty) && empty.left.message).toBe("token must be a non-empty string")
  })
})

const causes: ReadonlyArray<Cause> = [
  "agentCancelled",
  "timedOut",
  "failed",
  "launchFailed",
  "controllerInterrupted",
  "claimLost"
]
const idText = fc.oneof(
  fc.string({ minLength: 1, maxLength: 24 }),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }),
  fc.constantFrom("a", "b", "a:b", "a\u0000b", '"', "$launch")
)
const intentKey: fc.Arbitrary<IntentKey> = fc.record({
  targetSessionId: idText,
  runId: idText,
  sourceEventId: idText,
  nodeId: fc.option(idText, { nil: null }),
  attemptId: fc.option(idText, { nil: null }),
  cause: fc.constantFrom(...causes)
})

/** Keys the specification treats as the same source: a null node is `$launch`. */
const canonical = (key: IntentKey) =>
  JSON.stringify([
    key.targetSessionId,
    key.runId,
    key.sourceEventId,
    key.nodeId ?? LAUNCH_NODE,
    key.attemptId,
    key.cause
  ])

const idOf = (key: IntentKey) => Effect.runSync(intentId(key))

describe("intent identity properties", () => {
  it("differs whenever any input differs", () => {
    fc.assert(
      fc.property(intentKey, intentKey, (a, b) => {
        expect(idOf(a) === idOf(b)).toBe(canonical(a) === canonical(b))
      }),
      { numRuns: 500 }
    )
  })

  it("differs when exactly one field changes", () => {
    const field = fc.constantFrom("targetSessionId", "runId", "sourceEventId", "nodeId", "attemptId", "cause")
    fc.assert(
      fc.property(intentKey, field, idText, fc.constantFrom(...causes), (key, name, text, cause) => {
        const changed: IntentKey = name === "cause" ? { ...key, cause } : { ...key, [name]: text }
        expect(idOf(changed) === idOf(key)).toBe(canonical(changed) === canonical(key))
      }),
      { numRuns: 500 }
    )
  })

  it("is deterministic and bounded for any valid key", () => {
    fc.assert(
      fc.property(intentKey, (key) => {
        const id = idOf(key)
        expect(idOf({ ...key })).toBe(id)
        expect(id.length).toBeLessThanOrEqual(MAX_ID_LENGTH)
      }),
      { numRuns: 300 }
    )
  })
})
