/** Submission rules: every bad submission is a clear error and changes nothing. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema, TestClock } from "effect"
import { makeHarness, SESSION } from "./support/harness.ts"

const reviewed = {
  name: "reviewed",
  startAt: "review",
  nodes: {
    review: {
      type: "agent",
      prompt: "Review the change and answer {verdict, notes}",
      timeoutMs: 60_000,
      output: (value: unknown) =>
        typeof value === "object" && value !== null && "verdict" in value ? true : "output needs a verdict"
    },
    summary: {
      type: "agent",
      prompt: "Summarise",
      output: Schema.Struct({ text: Schema.String })
    }
  },
  edges: [{ from: "review", to: "summary" }]
}

const detailsOf = (message: { readonly message: { readonly details: Readonly<Record<string, unknown>> } }) =>
  message.message.details as { requestId: string; runId: string; nodeId: string; attemptId: string }

const durable = (
  h: Effect.Effect.Success<ReturnType<typeof makeHarness>>,
  runId: string,
  requestId: string
) =>
  Effect.gen(function* () {
    return {
      run: Option.getOrThrow(yield* h.store.get(runId)),
      steps: yield* h.store.steps(runId),
      request: yield* h.store.request(requestId)
    }
  })

describe("submit", () => {
  it.scoped(
    "rejects unknown, cross-run, cross-session and invalid submissions without changing anything",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness({ definitions: [reviewed] })
        const runId = yield* h.launch("reviewed")
        const prompt = detailsOf(yield* h.coordinator.take)
        expect(prompt).toMatchObject({ runId, nodeId: "review", schema: "pi-workflows.agent-step.v1" })
        const before = yield* durable(h, runId, prompt.requestId)
        const reject = (input: {
          sessionId?: string
          requestId?: string
          output?: unknown
          runId?: string
        }) =>
          Effect.flip(
            h.engine.submit({
              sessionId: input.sessionId ?? SESSION,
              requestId: input.requestId ?? prompt.requestId,
              output: "output" in input ? input.output : { verdict: "ok" },
              ...(input.runId === undefined ? {} : { runId: input.runId })
            })
          )
        const cases = [
          yield* reject({ requestId: "req-unknown" }),
          yield* reject({ requestId: "" }),
          yield* reject({ runId: "another-run" }),
          yield* reject({ sessionId: "session-2" }),
          yield* reject({ output: { notes: "no verdict" } }),
          yield* reject({ output: undefined }),
          yield* reject({ output: { verdict: Number.NaN } })
        ]
        expect(cases.map((e) => (e._tag === "SubmitRejected" ? e.reason : e._tag))).toEqual([
          "unknown",
          "unknown",
          "crossRun",
          // Another session's run: the one ownership refusal of every tool action.
          "ForeignRun",
          "invalidOutput",
          "invalidOutput",
          "invalidOutput"
        ])
        expect(cases[4]?.message).toBe(
          `submission for request ${prompt.requestId} rejected (invalidOutput): output needs a verdict`
        )
        expect(cases[6]?.message).toMatch(/output\.verdict is not a finite number/)
        expect(yield* durable(h, runId, prompt.requestId)).toEqual(before)
        // The request stayed open: a valid answer is accepted.
        const receipt = yield* h.engine.submit({
          sessionId: SESSION,
          requestId: prompt.requestId,
          output: { verdict: "ok" }
        })
        expect(receipt).toMatchObject({
          runId,
          requestId: prompt.requestId,
          nodeId: "review",
          attemptId: prompt.attemptId
        })
      })
  )

  it.scoped("an identical repeat returns the saved receipt; a different one is a duplicate", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [reviewed] })
      const runId = yield* h.launch("reviewed")
      const prompt = detailsOf(yield* h.coordinator.take)
      const output = { verdict: "ok", notes: ["a", "b"] }
      const receipt = yield* h.engine.submit({ sessionId: SESSION, requestId: prompt.requestId, output })
      yield* TestClock.adjust(5_000)
      const reordered = { notes: ["a", "b"], verdict: "ok" }
      expect(
        yield* h.engine.submit({ sessionId: SESSION, requestId: prompt.requestId, output: reordered })
      ).toEqual(receipt)
      const different = yield* Effect.flip(
        h.engine.submit({ sessionId: SESSION, requestId: prompt.requestId, output: { verdict: "no" } })
      )
      expect(different._tag === "SubmitRejected" && different.reason).toBe("duplicate")
      // A stale submission after the runner moved on.
      const next = detailsOf(yield* h.coordinator.take)
      expect(next.nodeId).toBe("summary")
      const schemaRejected = yield* Effect.flip(
        h.engine.submit({ sessionId: SESSION, requestId: next.requestId, output: { text: 5 } })
      )
      // In plain words, naming the field (never the schema's own syntax).
      expect(schemaRejected.message).toContain("text must be a string (got 5)")
      yield* h.engine.submit({ sessionId: SESSION, requestId: next.requestId, output: { text: "fine" } })
      const done = yield* h.engine.await(runId)
      expect([done.state, done.result]).toEqual(["completed", { text: "fine" }])
    })
  )

  it.scoped("after a timeout the request is stale, and the late answer changes nothing", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [reviewed] })
      const runId = yield* h.launch("reviewed")
      const prompt = detailsOf(yield* h.coordinator.take)
      yield* TestClock.adjust(60_000)
      yield* h.engine.await(runId)
      const before = yield* durable(h, runId, prompt.requestId)
      const late = yield* Effect.flip(
        h.engine.submit({ sessionId: SESSION, requestId: prompt.requestId, output: { verdict: "late" } })
      )
      expect(late._tag === "SubmitRejected" && [late.reason, late.detail]).toEqual([
        "stale",
        "this request is no longer open (timed_out); only the latest prompt of a running step accepts output"
      ])
      expect(yield* durable(h, runId, prompt.requestId)).toEqual(before)
    })
  )

  it.scoped("a prompt that cannot be delivered fails the step", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [reviewed] })
      yield* h.coordinator.failNextSends(1)
      const runId = yield* h.launch("reviewed")
      const done = yield* h.engine.await(runId)
      expect([done.state, done.error?.original]).toEqual([
        "failed",
        "the prompt could not be delivered: scripted send failure"
      ])
      expect(done.openRequestId).toBeNull()
    })
  )
})
