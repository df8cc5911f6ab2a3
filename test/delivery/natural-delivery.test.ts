import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Ref, TestClock } from "effect"
import { resolutionMessageId } from "../../src/domain/identity.ts"
import {
  FALLBACK,
  interrupted,
  makeHarness,
  presentation,
  prompt,
  provenance,
  terminal
} from "../conformance/harness.ts"

const PROMPT = "pi-workflows-prompt"

describe("natural delivery", () => {
  it.scoped("without a pending intent the message is sent unchanged, at once, even while busy", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const message = prompt("step 2")
      const receipt = yield* h.coordinator.deliverNatural(message)
      expect(receipt).toEqual({ turnIntentId: null, sent: true, note: null })
      const [sent] = yield* h.fake.sent
      expect(sent?.message).toEqual(message.message)
      expect(sent?.options).toEqual(message.options)
    })
  )

  it.scoped("with a pending intent it waits for settle, then claims, marks, sends and resolves", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      const delivering = yield* Effect.fork(h.coordinator.deliverNatural(prompt("recover: retry the step")))
      yield* Effect.yieldNow()
      expect(yield* h.fake.sent).toEqual([]) // never into the aborting turn
      yield* h.settle(true)
      const receipt = yield* Fiber.join(delivering)
      expect(receipt).toEqual({ turnIntentId: intentId, sent: true, note: null })
      const [sent] = yield* h.fake.sent
      expect(sent?.phase).toBe("idle")
      expect(sent?.message.details).toMatchObject({ runId: "run-1", turnIntentId: intentId })
      const [intent] = yield* h.intents
      expect(intent).toMatchObject({
        resolution: "workflowPrompt",
        resolutionMessageId: resolutionMessageId(intentId ?? "", "workflowPrompt")
      })
    })
  )

  it.scoped("a presentation resolves as presentation", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(interrupted("controllerInterrupted"))
      yield* h.coordinator.deliverNatural(presentation("run completed: 3 files changed"))
      expect((yield* h.intents)[0]?.resolution).toBe("presentation")
    })
  )

  it.scoped("a prompt produced while a system abort is in flight waits even without an intent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      yield* h.setFaults({ ensure: "fail" }) // the intent is not stored: only bookkeeping knows
      yield* h.events.publish(interrupted("agentCancelled"))
      const delivering = yield* Effect.fork(h.coordinator.deliverNatural(prompt("next")))
      yield* Effect.yieldNow()
      expect(yield* h.fake.sent).toEqual([])
      yield* h.settle(true)
      expect(yield* Fiber.join(delivering)).toMatchObject({ turnIntentId: null, sent: true })
      const [sent] = yield* h.fake.sent
      expect(sent?.entryId).not.toBeNull()
    })
  )

  it.scoped("send failure releases the claim and fails; the retry resolves the same intent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      yield* h.fake.failNextSends(1)
      const error = yield* Effect.flip(h.coordinator.deliverNatural(prompt("recover")))
      expect(error._tag).toBe("SendFailed")
      const [pending] = yield* h.intents
      expect(pending).toMatchObject({ resolvedAt: null, deliveryClaimToken: null })
      const receipt = yield* h.coordinator.deliverNatural(prompt("recover"))
      expect(receipt).toMatchObject({ turnIntentId: intentId, sent: true })
      expect(yield* h.fake.sent).toHaveLength(1)
    })
  )

  it.scoped("an intent already resolved by the fallback does not swallow the natural message", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(terminal("failed", null))
      const report = yield* h.coordinator.syncFallbacks("periodic")
      expect(report.delivered).toHaveLength(1)
      yield* h.fake.settle()
      const receipt = yield* h.coordinator.deliverNatural(presentation("late result"))
      expect(receipt).toEqual({ turnIntentId: null, sent: true, note: null })
      expect((yield* h.fake.sent).map((r) => r.message.customType)).toEqual([FALLBACK, "pi-workflows-result"])
    })
  )

  it.scoped("the same message already in the branch counts as delivered (crash before resolve)", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      const message = prompt("recover")
      const details = {
        ...message.message.details,
        turnIntentId: intentId,
        turnMessageId: resolutionMessageId(intentId ?? "", "workflowPrompt")
      }
      yield* h.fake.appendBranch({ customType: PROMPT, content: "recover", details })
      const receipt = yield* h.coordinator.deliverNatural(message)
      expect(receipt).toEqual({ turnIntentId: intentId, sent: false, note: null })
      expect(yield* h.fake.sent).toEqual([])
      expect((yield* h.intents)[0]?.resolution).toBe("workflowPrompt")
    })
  )

  it.scoped("a different message of the same intent in the branch repairs it; this one is still sent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      yield* h.fake.appendBranch({
        customType: PROMPT,
        content: "step 1",
        details: { turnIntentId: intentId }
      })
      const receipt = yield* h.coordinator.deliverNatural(prompt("step 2"))
      expect(receipt).toEqual({ turnIntentId: null, sent: true, note: null })
      expect((yield* h.fake.sent).map((r) => r.message.content)).toEqual(["step 2"])
      expect((yield* h.intents)[0]?.resolution).toBe("workflowPrompt")
    })
  )

  it.scoped("an intent claimed by another live claimant: wait, then claim it after the lease", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({
        timings: { deliveryLease: Duration.millis(10_000), claimRetry: Duration.millis(1_000) }
      })
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      const held = yield* h.store.claimForRun({
        runId: "run-1",
        targetSessionId: "session-1",
        token: "crashed-process",
        leaseMs: 10_000
      })
      expect(Option.isSome(held)).toBe(true)
      const delivering = yield* Effect.fork(h.coordinator.deliverNatural(prompt("recover")))
      yield* TestClock.adjust(5_000)
      expect(yield* h.fake.sent).toEqual([])
      yield* TestClock.adjust(5_000)
      expect(yield* Fiber.join(delivering)).toMatchObject({ turnIntentId: intentId, sent: true })
      expect((yield* h.intents)[0]?.resolution).toBe("workflowPrompt")
    })
  )

  it.scoped("an intent resolved by its other claimant meanwhile: send without claiming", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { claimRetry: Duration.millis(1_000) } })
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      yield* h.store.claimForRun({
        runId: "run-1",
        targetSessionId: "session-1",
        token: "other",
        leaseMs: 30_000
      })
      const delivering = yield* Effect.fork(h.coordinator.deliverNatural(prompt("recover")))
      yield* TestClock.adjust(1_000)
      yield* h.store.resolve({
        intentId: intentId ?? "",
        token: "other",
        resolution: "fallback",
        messageId: "m"
      })
      yield* TestClock.adjust(1_000)
      expect(yield* Fiber.join(delivering)).toEqual({ turnIntentId: null, sent: true, note: null })
      expect((yield* h.fake.sent)[0]?.message.details).not.toHaveProperty("turnIntentId")
    })
  )

  it.scoped("a store that cannot be read degrades to an unchanged send with a note", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(interrupted("timedOut"))
      yield* h.setFaults({ list: "fail" })
      const receipt = yield* h.coordinator.deliverNatural(prompt("recover"))
      expect(receipt).toMatchObject({ turnIntentId: null, sent: true })
      expect(receipt.note).toMatch(/turn intents unavailable/)
      expect(yield* h.fake.sent).toHaveLength(1)
    })
  )

  it.scoped(
    "a prompt answering an intent whose message is already in the branch goes plain when the store cannot be read",
    () =>
      Effect.gen(function* () {
        // A new owner whose memory still holds the abort its predecessor's prompt answered.
        const h = yield* makeHarness()
        const { intentId } = yield* h.events.publish(interrupted("timedOut"))
        const answers = intentId ?? ""
        yield* h.coordinator.deliverNatural({ ...prompt("recover"), answers })
        yield* h.fake.settle()
        yield* h.setFaults({ list: "fail" })
        const receipt = yield* h.coordinator.deliverNatural({ ...prompt("recover, again"), answers })
        expect(receipt).toMatchObject({ turnIntentId: null, sent: true })
        const marked = (yield* h.fake.sent).filter((s) => s.message.details?.turnIntentId === answers)
        expect(marked).toHaveLength(1)
      })
  )

  it.scoped("a resolution that cannot be stored is repaired from the branch later", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ coordinator: { resolveAttempts: 1 } })
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      yield* h.setFaults({ resolve: 1 })
      const receipt = yield* h.coordinator.deliverNatural(prompt("recover"))
      expect(receipt.note).toMatch(/branch repair/)
      expect((yield* h.intents)[0]?.resolvedAt).toBeNull()
      // Terminal handling later makes it eligible; the sync pass repairs instead of sending.
      yield* h.fake.settle()
      yield* h.events.publish(terminal("failed", provenance("timedOut")))
      yield* TestClock.adjust(30_000) // the natural delivery's lease lapses
      const report = yield* h.coordinator.syncFallbacks("periodic")
      expect(report).toMatchObject({ delivered: [], repaired: [intentId] })
      expect(yield* h.sentOfType(FALLBACK)).toEqual([])
      expect((yield* h.intents)[0]?.resolution).toBe("workflowPrompt")
    })
  )

  it.scoped("an invalid run ID is a typed error and changes nothing", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(interrupted("timedOut"))
      const before = yield* h.intents
      const error = yield* Effect.flip(h.coordinator.deliverNatural(prompt("x", "")))
      expect(error._tag).toBe("InvalidInput")
      expect(yield* h.intents).toEqual(before)
      expect(yield* h.fake.sent).toEqual([])
    })
  )

  describe("a message bound to its intent (a completed run's presentation)", () => {
    const completed = terminal("completed", null)
    const bound = (intentId: string) => ({ ...presentation("run completed"), turnIntentId: intentId })

    it.scoped("resolves its intent as presentation, like any natural message", () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        const { intentId } = yield* h.events.publish(completed)
        const [stored] = yield* h.intents
        expect([stored?.cause, stored?.eligibleAt]).toEqual(["completed", null])
        const receipt = yield* h.coordinator.deliverNatural(bound(intentId ?? ""))
        expect(receipt).toEqual({ turnIntentId: intentId, sent: true, note: null })
        expect((yield* h.intents)[0]?.resolution).toBe("presentation")
      })
    )

    it.scoped("is not sent once the intent's fallback was delivered: one terminal message", () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        const { intentId } = yield* h.events.publish(completed)
        // Reconciliation made it eligible (the presentation seemed lost); the fallback went first.
        yield* h.store.makeEligible({ intentId: intentId ?? "" })
        yield* h.settle()
        expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
        const receipt = yield* h.coordinator.deliverNatural(bound(intentId ?? ""))
        expect(receipt).toMatchObject({ turnIntentId: null, sent: false })
        expect(yield* h.fake.sent).toHaveLength(1)
      })
    )

    it.scoped("is not sent plain when its intent was never stored (reconciliation owes the fallback)", () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        const receipt = yield* h.coordinator.deliverNatural(bound("deferred-turn:never-stored"))
        expect(receipt).toMatchObject({ turnIntentId: null, sent: false })
        expect(receipt.note).toContain("deferred-turn:never-stored")
        expect(yield* h.fake.sent).toEqual([])
      })
    )
  })

  describe("withdrawn or already written while it waits (asked right before each send)", () => {
    it.scoped(
      "a question answered while its presentation waits for settle is not sent; the next prompt answers the intent",
      () =>
        Effect.gen(function* () {
          const h = yield* makeHarness()
          yield* h.fake.startTurn
          const { intentId } = yield* h.events.publish(interrupted("timedOut"))
          const open = yield* Ref.make(true)
          const delivering = yield* Effect.fork(
            h.coordinator.deliverNatural({ ...presentation("Approve?"), stillWanted: Ref.get(open) })
          )
          yield* Effect.yieldNow()
          yield* Ref.set(open, false) // the user answered meanwhile
          yield* h.settle(true)
          expect(yield* Fiber.join(delivering)).toEqual({
            turnIntentId: null,
            sent: false,
            note: "withdrawn: no longer wanted"
          })
          expect(yield* h.fake.sent).toEqual([])
          const [waiting] = yield* h.intents
          expect([waiting?.resolvedAt, waiting?.deliveryClaimToken]).toEqual([null, null]) // pending, released
          const next = yield* h.coordinator.deliverNatural(prompt("step 3"))
          expect(next).toEqual({ turnIntentId: intentId, sent: true, note: null })
          expect((yield* h.fake.sent).map((s) => s.message.content)).toEqual(["step 3"])
        })
    )

    it.scoped("withdrawn while a plain send waits out a system abort: nothing is sent", () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        yield* h.fake.startTurn
        yield* h.setFaults({ ensure: "fail" }) // no intent stored: the plain path, held by the abort
        yield* h.events.publish(interrupted("agentCancelled"))
        const open = yield* Ref.make(true)
        const delivering = yield* Effect.fork(
          h.coordinator.deliverNatural({ ...presentation("Approve?"), stillWanted: Ref.get(open) })
        )
        yield* Effect.yieldNow()
        yield* Ref.set(open, false)
        yield* h.settle(true)
        expect(yield* Fiber.join(delivering)).toMatchObject({
          sent: false,
          note: "withdrawn: no longer wanted"
        })
        expect((yield* h.fake.sent).filter((s) => s.message.customType !== FALLBACK)).toEqual([])
      })
    )

    it.scoped("a once message whose copy another delivery wrote meanwhile is not sent again", () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        yield* h.fake.startTurn
        yield* h.events.publish(interrupted("timedOut"))
        const question = presentation("Approve?")
        const once = {
          ...question,
          once: true as const,
          message: { ...question.message, details: { runId: "run-1", requestId: "req-1" } }
        }
        const delivering = yield* Effect.fork(h.coordinator.deliverNatural(once))
        yield* Effect.yieldNow()
        // Another process on this session wrote its copy while this one waited for settle.
        yield* h.fake.appendBranch(once.message)
        yield* h.settle(true)
        expect(yield* Fiber.join(delivering)).toMatchObject({ sent: false, note: "already in the branch" })
        expect(yield* h.fake.sent).toEqual([])
      })
    )
  })
})
