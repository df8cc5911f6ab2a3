/** Cancel, pause, park, resume, controller interrupt, launch failures and the run queue. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { StepContext } from "../../src/engine/definition.ts"
import { eventTags, makeHarness, SESSION, waitUntil } from "./support/harness.ts"

/** ask (agent) → count (compute) → confirm (agent) → end */
const twoAgents = (revision = 1, prompt = "first question") => ({
  name: "two",
  revision,
  startAt: "ask",
  nodes: {
    ask: { type: "agent", prompt },
    count: { type: "compute", run: (ctx: StepContext) => String(ctx.outputs.ask).length },
    confirm: {
      type: "agent",
      prompt: (ctx: StepContext) => `the answer had ${String(ctx.outputs.count)} characters`
    }
  },
  edges: [
    { from: "ask", to: "count" },
    { from: "count", to: "confirm" }
  ]
})

const requestId = (message: { readonly message: { readonly details: Readonly<Record<string, unknown>> } }) =>
  String(message.message.details.requestId)

describe("agent and user cancellation", () => {
  it.scoped(
    "agent cancel with an open request: provenance first (durable), then the abort event, then terminal",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness({ definitions: [twoAgents()] })
        const runId = yield* h.launch("two")
        yield* h.coordinator.take
        yield* h.engine.cancel(runId, { by: "agent" })
        const events = yield* h.events
        expect(eventTags(events)).toEqual(["ActiveTurnInterrupted:agentCancelled", "RunTerminal:cancelled"])
        const record = Option.getOrThrow(yield* h.store.get(runId))
        const attemptId = record.currentAttemptId
        const provenance = { cause: "agentCancelled", nodeId: "ask", attemptId, interruption: 0 }
        expect(record.abort).toEqual(provenance)
        expect(record.interruptions).toBe(1)
        expect(events).toMatchObject([
          { _tag: "ActiveTurnInterrupted", provenance, reason: "cancelled by the agent" },
          { _tag: "RunTerminal", state: "cancelled", provenance, nodeId: "ask", attemptId }
        ])
      })
  )

  it.scoped(
    "agent cancel during a compute step owes the terminal turn (no abort); user cancel publishes Quiet",
    () =>
      Effect.gen(function* () {
        const started = { n: 0 }
        const slow = {
          name: "slow",
          startAt: "work",
          nodes: {
            work: {
              type: "compute",
              run: () => {
                started.n++
                return new Promise(() => {})
              }
            }
          },
          edges: []
        }
        const h = yield* makeHarness({ definitions: [slow] })
        const first = yield* h.launch("slow")
        yield* waitUntil(() => started.n === 1)
        expect((yield* h.engine.cancel(first, { by: "agent" })).state).toBe("cancelled")
        // No agent turn of the run is open, so nothing is aborted; the run's end still owes the
        // model its terminal turn (spec 004), and the provenance is on the row for reconciliation.
        const record = Option.getOrThrow(yield* h.store.get(first))
        const provenance = {
          cause: "agentCancelled",
          nodeId: "work",
          attemptId: record.currentAttemptId,
          interruption: 0
        }
        expect(record.abort).toEqual(provenance)
        expect(eventTags(yield* h.events)).toEqual(["RunTerminal:cancelled"])
        expect(yield* h.events).toMatchObject([{ _tag: "RunTerminal", state: "cancelled", provenance }])
        const second = yield* h.launch("slow", {}, "command")
        yield* waitUntil(() => started.n === 2)
        yield* h.engine.cancel(second, { by: "user" })
        expect(eventTags(yield* h.events)).toEqual(["RunTerminal:cancelled", "Quiet:directCancel"])
        const again = yield* Effect.flip(h.engine.cancel(second, { by: "user" }))
        expect(again.message).toMatch(/cannot cancel run .* \(cancelled\): it has already ended/)
      })
  )

  it.scoped("a queued run can be cancelled before activation", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const started = yield* h.engine.start({
        workflow: "two",
        input: {},
        sessionId: SESSION,
        origin: "command"
      })
      const notYet = yield* Effect.flip(h.engine.pause(started.runId))
      expect(notYet.message).toMatch(/cannot pause run .* \(queued\): it has not started yet/)
      const cancelled = yield* h.engine.cancel(started.runId, { by: "user" })
      expect(cancelled.state).toBe("cancelled")
      expect(Option.isNone(yield* h.engine.activate(SESSION))).toBe(true)
    })
  )
})

describe("pause, park and resume", () => {
  it.scoped("pause holds at the next step boundary; resume continues there", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const runId = yield* h.launch("two")
      const first = yield* h.coordinator.take
      const paused = yield* h.engine.pause(runId)
      expect([paused.state, paused.pauseRequested]).toEqual(["running", true])
      expect(eventTags(yield* h.events)).toEqual(["Quiet:pause"])
      // The step in flight finishes normally; the run then holds before `count`.
      yield* h.engine.submit({ sessionId: SESSION, requestId: requestId(first), output: "hello" })
      const held = yield* h.engine.await(runId)
      expect([held.state, held.currentNodeId, held.claimed, held.steps]).toEqual([
        "waiting",
        "count",
        false,
        1
      ])
      const resumed = yield* h.engine.resume(runId)
      expect(resumed.state).toBe("running")
      const second = yield* h.coordinator.take
      expect(second.message.content).toContain("the answer had 5 characters")
      yield* h.engine.submit({ sessionId: SESSION, requestId: requestId(second), output: "ok" })
      expect((yield* h.engine.await(runId)).state).toBe("completed")
    })
  )

  it.scoped("park reruns the in-flight node with a fresh attempt; the old request is stale", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const runId = yield* h.launch("two")
      const first = yield* h.coordinator.take
      const parked = yield* h.engine.park(runId, "maintenance")
      expect([parked.state, parked.parkedReason, parked.openRequestId]).toEqual([
        "running",
        "maintenance",
        null
      ])
      expect(yield* h.events).toEqual([])
      const stale = yield* Effect.flip(
        h.engine.submit({ sessionId: SESSION, requestId: requestId(first), output: "x" })
      )
      expect(stale._tag === "SubmitRejected" && [stale.reason, stale.detail]).toEqual([
        "stale",
        "this request is no longer open (parked); only the latest prompt of a running step accepts output"
      ])
      yield* h.engine.resume(runId)
      const rerun = yield* h.coordinator.take
      expect(rerun.message.details.nodeId).toBe("ask")
      expect(requestId(rerun)).not.toBe(requestId(first))
      expect(rerun.message.details.attemptId).not.toBe(first.message.details.attemptId)
      yield* h.engine.submit({ sessionId: SESSION, requestId: requestId(rerun), output: "hi" })
      const second = yield* h.coordinator.take
      yield* h.engine.submit({ sessionId: SESSION, requestId: requestId(second), output: "done" })
      const done = yield* h.engine.await(runId)
      expect([done.state, done.result, done.steps]).toEqual(["completed", "done", 3])
      const steps = (yield* h.engine.status(runId)).stepRecords
      expect(steps.map((s) => [s.nodeId, s.outcome, s.interrupted])).toEqual([
        ["ask", null, "parked: maintenance"],
        ["ask", "ok", null],
        ["count", "ok", null],
        ["confirm", "ok", null]
      ])
    })
  )

  it.scoped("a parked run can be paused directly and refuses a second resume while running", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const runId = yield* h.launch("two")
      yield* h.coordinator.take
      yield* h.engine.park(runId, "x")
      const held = yield* h.engine.pause(runId)
      expect(held.state).toBe("waiting")
      yield* h.engine.resume(runId)
      const twice = yield* Effect.flip(h.engine.resume(runId))
      expect(twice.message).toMatch(/already running in this process/)
      const notHere = yield* Effect.flip(h.engine.park("nope", "x"))
      expect(notHere._tag).toBe("RunNotFound")
    })
  )

  it.scoped("a run refuses to resume when its workflow's revision or source changed; nothing changes", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents(1)] })
      const runId = yield* h.launch("two")
      yield* h.coordinator.take
      yield* h.engine.park(runId, "upgrade")
      const before = Option.getOrThrow(yield* h.store.get(runId))
      yield* h.registry.replaceAll([twoAgents(2)])
      const revised = yield* Effect.flip(h.engine.resume(runId))
      expect(revised._tag).toBe("SourceChanged")
      expect(revised.message).toBe(
        `run ${runId} of workflow "two" cannot continue: revision changed from 1 to 2 since the run started. ` +
          "Reload Pi (or restart it) so every session loads the current definition, then start a new run"
      )
      yield* h.registry.replaceAll([twoAgents(1, "edited question")])
      const edited = yield* Effect.flip(h.engine.resume(runId))
      expect(edited.message).toMatch(/its source changed since the run started/)
      expect(Option.getOrThrow(yield* h.store.get(runId))).toEqual(before)
      yield* h.registry.replaceAll([twoAgents(1)])
      expect((yield* h.engine.resume(runId)).state).toBe("running")
    })
  )

  it.scoped("shutdown parks every active run quietly; recover resumes them", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const runId = yield* h.launch("two")
      yield* h.coordinator.take
      yield* h.engine.shutdown
      expect(eventTags(yield* h.events)).toEqual(["Quiet:shutdown"])
      yield* h.registry.replaceAll([twoAgents(2)])
      const refused = yield* h.engine.recover(SESSION)
      expect([refused.resumed, refused.refused.map((r) => r.reason)]).toEqual([
        [],
        [expect.stringMatching(/revision changed from 1 to 2/)]
      ])
      yield* h.registry.replaceAll([twoAgents(1)])
      const report = yield* h.engine.recover(SESSION)
      expect([report.resumed.map((r) => r.runId), report.refused]).toEqual([[runId], []])
      expect((yield* h.coordinator.take).message.details.nodeId).toBe("ask")
    })
  )
})

describe("controller interrupt", () => {
  it.scoped("interrupt then park: abort provenance recorded, no terminal event", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const runId = yield* h.launch("two")
      yield* h.coordinator.take
      const parked = yield* h.engine.interrupt(runId, { reason: "operator takeover", afterwards: "park" })
      expect([parked.state, parked.parkedReason]).toEqual(["running", "interrupted: operator takeover"])
      expect(eventTags(yield* h.events)).toEqual(["ActiveTurnInterrupted:controllerInterrupted"])
      const record = Option.getOrThrow(yield* h.store.get(runId))
      expect([record.abort?.cause, record.abortPending]).toEqual(["controllerInterrupted", true])
      // The new prompt after resume is the natural successor of that abort.
      yield* h.engine.resume(runId)
      yield* h.coordinator.take
      expect(Option.getOrThrow(yield* h.store.get(runId)).abortPending).toBe(false)
    })
  )

  it.scoped("interrupt then fail: the terminal event carries the interruption's provenance", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const runId = yield* h.launch("two")
      yield* h.coordinator.take
      const failed = yield* h.engine.interrupt(runId, { reason: "budget exhausted", afterwards: "fail" })
      expect([failed.state, failed.error?.message]).toEqual([
        "failed",
        "interrupted by the controller: budget exhausted"
      ])
      const events = yield* h.events
      expect(eventTags(events)).toEqual(["ActiveTurnInterrupted:controllerInterrupted", "RunTerminal:failed"])
      expect(events[1]).toMatchObject({
        provenance: { cause: "controllerInterrupted", interruption: 0 },
        interruption: 1
      })
    })
  )
})

describe("run queue and launch", () => {
  it.scoped("start reserves and returns at once; a second start for the session is refused", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const started = yield* h.engine.start({
        workflow: "two",
        input: { a: 1 },
        sessionId: SESSION,
        origin: "tool"
      })
      expect([started.state, started.workflowRef, started.currentNodeId]).toEqual(["queued", "two@1", "ask"])
      expect(started.runId).toMatch(/^\d{8}T\d{6}Z-two-[0-9a-f]{8}$/)
      expect(yield* h.coordinator.delivered).toEqual([])
      const second = yield* Effect.flip(
        h.engine.start({ workflow: "two", input: {}, sessionId: SESSION, origin: "tool" })
      )
      expect(second._tag).toBe("ReservationConflict")
      expect((yield* h.engine.list(SESSION)).map((r) => r.runId)).toEqual([started.runId])
    })
  )

  it.scoped("immediate start errors are typed and write nothing", () =>
    Effect.gen(function* () {
      const checked = {
        ...twoAgents(),
        input: (value: unknown) => (typeof value === "object" ? true : "input must be an object")
      }
      const h = yield* makeHarness({ definitions: [checked] })
      const start = (workflow: string, input: unknown, sessionId = SESSION) =>
        Effect.flip(h.engine.start({ workflow, input, sessionId, origin: "tool" }))
      expect((yield* start("missing", {}))._tag).toBe("WorkflowNotFound")
      expect((yield* start("two", "text")).message).toBe(
        'input of workflow "two" is invalid: input must be an object'
      )
      expect((yield* start("two", { f: () => 1 })).message).toMatch(/input\.f is function/)
      expect((yield* start("two", {}, ""))._tag).toBe("InvalidInput")
      expect(yield* h.engine.list(SESSION)).toEqual([])
    })
  )

  it.scoped("launch failures at activation: the row fails durably, then LaunchFailed", () =>
    Effect.gen(function* () {
      const flaky = { valid: true }
      const gated = { ...twoAgents(), input: () => (flaky.valid ? true : "no longer acceptable") }
      const h = yield* makeHarness({ definitions: [gated] })
      const check = (reason: RegExp) =>
        Effect.gen(function* () {
          const activated = Option.getOrThrow(yield* h.engine.activate(SESSION))
          expect(activated.state).toBe("failed")
          expect(activated.error?.message).toMatch(reason)
          const last = (yield* h.events).at(-1)
          expect(last).toMatchObject({ _tag: "LaunchFailed", run: { runId: activated.runId } })
          expect(Option.getOrThrow(yield* h.store.get(activated.runId)).state).toBe("failed")
        })
      yield* h.engine.start({ workflow: "two", input: {}, sessionId: SESSION, origin: "tool" })
      flaky.valid = false
      yield* check(/^input is invalid: no longer acceptable$/)
      flaky.valid = true
      yield* h.engine.start({ workflow: "two", input: {}, sessionId: SESSION, origin: "tool" })
      yield* h.registry.replaceAll([{ ...gated, revision: 2 }])
      yield* check(/revision changed from 1 to 2/)
      yield* h.engine.start({ workflow: "two", input: {}, sessionId: SESSION, origin: "tool" })
      yield* h.registry.replaceAll([])
      yield* check(/^workflow "two" is no longer loaded$/)
      expect(eventTags(yield* h.events)).toEqual(["LaunchFailed", "LaunchFailed", "LaunchFailed"])
    })
  )

  it.scoped("status and list report state, current node, open request and steps", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [twoAgents()] })
      const runId = yield* h.launch("two")
      const prompt = yield* h.coordinator.take
      const status = yield* h.engine.status(runId)
      expect(status).toMatchObject({
        runId,
        state: "running",
        origin: "tool",
        targetSessionId: SESSION,
        currentNodeId: "ask",
        openRequestId: requestId(prompt),
        steps: 0,
        maxSteps: 100,
        claimed: true
      })
      expect(status.stepRecords).toMatchObject([{ seq: 1, nodeId: "ask", outcome: null }])
      expect(yield* h.engine.list(SESSION)).toMatchObject([{ runId, openRequestId: requestId(prompt) }])
      expect((yield* Effect.flip(h.engine.status("nope")))._tag).toBe("RunNotFound")
      expect(Option.map(yield* h.engine.active(SESSION), (r) => r.runId)).toEqual(Option.some(runId))
      yield* h.engine.cancel(runId, { by: "user" })
      expect(Option.isNone(yield* h.engine.active(SESSION))).toBe(true)
    })
  )
})
