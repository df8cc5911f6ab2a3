/**
 * Waiting checkpoints in the engine, on a real SQLite file and the test clock: the waiting
 * presentation, answers (first one wins, also from another engine on the same file), the
 * timeout route, cancel while waiting, restart and adoption while waiting, and the refusals.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import type { StepContext } from "../../src/engine/definition.ts"
import { eventTags, type Harness, makeHarness, SESSION, waitUntil } from "./support/harness.ts"

/** ask (wait) → use (compute: the answer's length) → end; `late` when the wait times out. */
const approval = {
  name: "approval",
  startAt: "ask",
  nodes: {
    ask: { type: "wait", prompt: "Ship it? Answer yes or no.", timeoutMs: 60_000 },
    use: {
      type: "compute",
      run: (ctx: StepContext) => ({
        seen: (ctx.results.ask?.output as { answer: unknown } | undefined)?.answer
      })
    },
    late: { type: "compute", run: () => ({ late: true }) }
  },
  edges: [{ from: "ask", switch: { on: "$result.outcome", cases: { ok: "use", timed_out: "late" } } }]
}

const details = (message: { readonly message: { readonly details: unknown } }) =>
  message.message.details as Record<string, unknown>

/** Drive the test clock and the event loop until the run has ended (bounded). */
const untilEnded = (h: { readonly store: Harness["store"] }, runId: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 200; i++) {
      const state = Option.getOrThrow(yield* h.store.get(runId)).state
      if (state !== "running" && state !== "waiting") return state
      yield* TestClock.adjust(0)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    }
    return "still running"
  })

const setup = Effect.gen(function* () {
  const h = yield* makeHarness({ definitions: [approval] })
  const runId = yield* h.launch("approval")
  const presented = yield* h.coordinator.take
  const requestId = String(details(presented).requestId)
  yield* waitUntil(() => true)
  return { h, runId, presented, requestId }
})

describe("waiting checkpoints", () => {
  it.scoped("the run waits without a claim and one waiting presentation names the answer call", () =>
    Effect.gen(function* () {
      const { h, runId, presented, requestId } = yield* setup
      expect(presented.kind).toBe("presentation")
      expect(presented.once).toBe(true)
      expect(details(presented)).toMatchObject({ runId, nodeId: "ask", requestId, state: "waiting" })
      expect(presented.options).toEqual({ deliverAs: "followUp", triggerTurn: true })
      const content = String(presented.message.content)
      expect(content).toContain("Ship it?")
      expect(content).toContain(`{"action": "answer", "requestId": "${requestId}"`)
      expect(content).toContain(`/workflow answer ${runId}`)
      const record = Option.getOrThrow(yield* h.store.get(runId))
      expect([record.state, record.claimToken, record.waitRequestId]).toEqual(["waiting", null, requestId])
      expect((yield* h.engine.status(runId)).condition).toBe("waiting for an answer")
      expect(yield* h.coordinator.delivered).toHaveLength(1)
      // No terminal turn while it waits.
      expect(eventTags(yield* h.events)).toEqual([])
    })
  )

  it.scoped(
    "an answer becomes the node's output, the run goes on and completes; later answers are refused",
    () =>
      Effect.gen(function* () {
        const { h, runId, requestId } = yield* setup
        const receipt = yield* h.engine.answer({ sessionId: SESSION, requestId, answer: "yes", by: "agent" })
        expect(receipt).toMatchObject({ runId, requestId, nodeId: "ask" })
        expect(yield* untilEnded(h, runId)).toBe("completed")
        const record = Option.getOrThrow(yield* h.store.get(runId))
        expect(Option.getOrThrow(record.result)).toEqual({ seen: "yes" })
        const steps = yield* h.store.steps(runId)
        expect(steps.map((s) => [s.nodeId, s.outcome])).toEqual([
          ["ask", "ok"],
          ["use", "ok"]
        ])
        expect(Option.getOrThrow(Option.flatMap(Option.fromNullable(steps[0]), (s) => s.output))).toEqual({
          answer: "yes"
        })
        const again = yield* Effect.either(
          h.engine.answer({ sessionId: SESSION, requestId, answer: "no", by: "user" })
        )
        expect(Either.isLeft(again) && again.left).toMatchObject({
          _tag: "AnswerRejected",
          reason: "answered"
        })
        expect(eventTags(yield* h.events)).toEqual(["RunTerminal:completed"])
      })
  )

  it.scoped("bad answers are typed refusals that change nothing; the run still waits", () =>
    Effect.gen(function* () {
      const { h, runId, requestId } = yield* setup
      const refused = (input: Parameters<typeof h.engine.answer>[0]) =>
        Effect.map(Effect.flip(h.engine.answer(input)), (error) =>
          error._tag === "AnswerRejected" ? error.reason : error._tag
        )
      expect(yield* refused({ sessionId: SESSION, requestId: "req-nope", answer: 1, by: "agent" })).toBe(
        "unknown"
      )
      expect(yield* refused({ sessionId: "other-session", requestId, answer: 1, by: "agent" })).toBe(
        "ForeignRun"
      )
      expect(yield* refused({ sessionId: SESSION, requestId, runId: "run-x", answer: 1, by: "agent" })).toBe(
        "crossRun"
      )
      expect(yield* refused({ sessionId: SESSION, requestId, answer: () => 1, by: "agent" })).toBe(
        "invalidAnswer"
      )
      const submitted = yield* Effect.flip(h.engine.submit({ sessionId: SESSION, requestId, output: 1 }))
      expect(submitted).toMatchObject({ _tag: "SubmitRejected", reason: "waitRequest" })
      const paused = yield* Effect.flip(h.engine.pause(runId))
      expect(paused._tag).toBe("InvalidRunState")
      const resumed = yield* Effect.flip(h.engine.resume(runId))
      expect(resumed.message).toMatch(/waits for an answer/)
      const record = Option.getOrThrow(yield* h.store.get(runId))
      expect([record.state, record.waitRequestId, record.stepCount]).toEqual(["waiting", requestId, 0])
    })
  )

  it.scoped("the limit passing first is the outcome timed_out, routed like any node", () =>
    Effect.gen(function* () {
      const { h, runId, requestId } = yield* setup
      yield* TestClock.adjust("59 seconds")
      expect(Option.getOrThrow(yield* h.store.get(runId)).state).toBe("waiting")
      yield* TestClock.adjust("2 seconds")
      expect(yield* untilEnded(h, runId)).toBe("completed")
      const record = Option.getOrThrow(yield* h.store.get(runId))
      expect(record.state).toBe("completed")
      expect(Option.getOrThrow(record.result)).toEqual({ late: true })
      const steps = yield* h.store.steps(runId)
      expect(steps.map((s) => [s.nodeId, s.outcome, s.error])).toEqual([
        ["ask", "timed_out", "timed out after 1m"],
        ["late", "ok", null]
      ])
      const late = yield* Effect.flip(
        h.engine.answer({ sessionId: SESSION, requestId, answer: "yes", by: "user" })
      )
      expect(late).toMatchObject({ reason: "closed" })
    })
  )

  it.scoped("cancel while waiting: the user's is quiet, the agent's owes its terminal turn", () =>
    Effect.gen(function* () {
      const { h, runId, requestId } = yield* setup
      expect((yield* h.engine.cancel(runId, { by: "user" })).state).toBe("cancelled")
      expect(eventTags(yield* h.events)).toEqual(["Quiet:directCancel"])
      const after = yield* Effect.flip(
        h.engine.answer({ sessionId: SESSION, requestId, answer: 1, by: "agent" })
      )
      expect(after).toMatchObject({ reason: "closed" })

      const second = yield* h.launch("approval")
      yield* h.coordinator.take
      expect((yield* h.engine.cancel(second, { by: "agent" })).state).toBe("cancelled")
      expect(eventTags(yield* h.events)).toEqual(["Quiet:directCancel", "RunTerminal:cancelled"])
    })
  )

  it.scoped("two engines on one file answer at once: exactly one wins, the other is refused", () =>
    Effect.gen(function* () {
      const { h, runId, requestId } = yield* setup
      const other = yield* makeHarness({ definitions: [approval], filename: h.filename })
      const results = yield* Effect.all(
        [
          Effect.either(h.engine.answer({ sessionId: SESSION, requestId, answer: "from A", by: "agent" })),
          Effect.either(other.engine.answer({ sessionId: SESSION, requestId, answer: "from B", by: "user" }))
        ],
        { concurrency: "unbounded" }
      )
      const won = results.filter(Either.isRight)
      expect(won).toHaveLength(1)
      const lost = results.find(Either.isLeft)
      expect(lost?.left).toMatchObject({ _tag: "AnswerRejected", reason: "answered" })
      expect(yield* untilEnded(h, runId)).toBe("completed")
      const record = Option.getOrThrow(yield* h.store.get(runId))
      expect(record.state).toBe("completed")
      expect(Option.getOrThrow(record.result)).toEqual({
        seen: results[0]?._tag === "Right" ? "from A" : "from B"
      })
    })
  )

  it.scoped(
    "a restart while waiting: the new process watches the deadline, resends once, and takes the answer",
    () =>
      Effect.gen(function* () {
        const { h, runId, requestId } = yield* setup
        const next = yield* makeHarness({ definitions: [approval], filename: h.filename })
        yield* next.engine.recover(SESSION)
        const resent = yield* next.coordinator.take
        // Sent `once`: the coordinator drops it when the branch already holds this request's copy.
        expect(resent.once).toBe(true)
        expect(details(resent)).toMatchObject({ requestId, state: "waiting" })
        yield* next.engine.answer({ sessionId: SESSION, requestId, answer: "later", by: "user" })
        expect(yield* untilEnded(next, runId)).toBe("completed")
        expect(
          Option.getOrThrow((yield* next.store.get(runId)).pipe(Option.flatMap((r) => r.result)))
        ).toEqual({
          seen: "later"
        })
      })
  )

  it.scoped("maintenance passes while waiting present nothing again in the process that presented it", () =>
    Effect.gen(function* () {
      const { h } = yield* setup
      // Engine.recover runs on every maintenance pass; the first copy may still be on its way
      // (a follow-up Pi writes when the turn ends), so the branch's `once` check cannot see it.
      yield* h.engine.recover(SESSION)
      yield* h.engine.recover(SESSION)
      // The presentations go out on background fibers: give them the event loop.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      expect((yield* h.coordinator.delivered).filter((m) => details(m).state === "waiting")).toHaveLength(1)
    })
  )

  it.scoped(
    "adopted by another session while waiting: it stays waiting, unclaimed; the question and the answer move there",
    () =>
      Effect.gen(function* () {
        const { h, runId, requestId } = yield* setup
        const next = yield* makeHarness({ definitions: [approval], filename: h.filename })
        const adopted = yield* next.engine.adopt(runId, "session-2")
        expect(adopted.adoption).toMatchObject({ fromSessionId: SESSION, toSessionId: "session-2" })
        const moved = Option.getOrThrow(yield* next.store.get(runId))
        expect([moved.state, moved.claimToken, moved.targetSessionId]).toEqual(["waiting", null, "session-2"])
        const presented = yield* next.coordinator.take
        expect(details(presented)).toMatchObject({ requestId, state: "waiting", runId })
        // The old session's answer is another session's now; the new one's continues the run.
        const stale = yield* Effect.flip(
          h.engine.answer({ sessionId: SESSION, requestId, answer: "old", by: "agent" })
        )
        expect(stale).toMatchObject({ _tag: "ForeignRun" })
        yield* next.engine.answer({ sessionId: "session-2", requestId, answer: "new", by: "user" })
        expect(yield* untilEnded(next, runId)).toBe("completed")
        expect(
          Option.getOrThrow((yield* next.store.get(runId)).pipe(Option.flatMap((r) => r.result)))
        ).toEqual({ seen: "new" })
      })
  )

  it.scoped(
    "a step timed out into the wait: the wait answers its abort, so the run's end owes its own turn",
    () =>
      Effect.gen(function* () {
        const escalate = {
          name: "escalate",
          startAt: "review",
          nodes: {
            review: { type: "agent", prompt: "Review the patch.", timeoutMs: 1_000 },
            ask: { type: "wait", prompt: "The review timed out. Approve anyway?" },
            decide: { type: "compute", run: () => "done" }
          },
          edges: [
            { from: "review", switch: { on: "$result.outcome", cases: { ok: "decide", timed_out: "ask" } } },
            { from: "ask", to: "decide" }
          ]
        }
        const h = yield* makeHarness({ definitions: [escalate] })
        const runId = yield* h.launch("escalate")
        yield* h.coordinator.take
        yield* TestClock.adjust("2 seconds")
        const presented = yield* h.coordinator.take
        expect(details(presented)).toMatchObject({ state: "waiting", nodeId: "ask" })
        // The presentation carries the timeout's intent as the one it answers.
        expect(presented.answers).toBeDefined()
        const waiting = Option.getOrThrow(yield* h.store.get(runId))
        expect([waiting.state, waiting.abortPending]).toEqual(["waiting", false])
        // Answered before the presentation's resolution is stored anywhere (the fake stores none).
        yield* h.engine.answer({
          sessionId: SESSION,
          requestId: String(details(presented).requestId),
          answer: "yes",
          by: "agent"
        })
        expect(yield* untilEnded(h, runId)).toBe("completed")
        const events = yield* h.events
        expect(eventTags(events)).toEqual(["ActiveTurnInterrupted:timedOut", "RunTerminal:completed"])
        const terminal = events.find((event) => event._tag === "RunTerminal")
        expect(terminal?._tag === "RunTerminal" && terminal.provenance).toBeNull()
      })
  )
})
