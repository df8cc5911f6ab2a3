/**
 * Adopting a run from another session, two app instances (two sessions) on one database with the
 * fake Pi session: refused while session A's runner is live; after A shut down (its run parked),
 * `/workflow resume <runId>` in B adopts it: the step prompt, the model's submit and the run's one
 * terminal turn are B's, and A (reopened) is sent nothing and its tool is refused as foreign.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Scope } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { freshLocation } from "../support/backend.ts"
import { eventually, lastRequestId, PRESENTATION, STEP, sentOfType, sessionApp } from "./support.ts"

const runIdOf = (details: Readonly<Record<string, unknown>>) => String(details.runId)

describe("/workflow resume <runId> of another session's run", () => {
  it.live(
    "refused while the owner runs it; adopted after it quit: prompt, submit and terminal turn here",
    () =>
      Effect.gen(function* () {
        const location = yield* freshLocation
        const scopeA = yield* Scope.make()
        const a = yield* Scope.extend(sessionApp(location, "sA"), scopeA)
        const b = yield* sessionApp(location, "sB")
        const started = yield* Effect.provide(
          runCommand({ _tag: "start", workflow: "greet", input: null }),
          a
        )
        const runId = runIdOf(started.details)
        // A runs the step.
        yield* Effect.provide(onSessionStart, a)
        yield* Effect.provide(
          eventually(sentOfType(STEP), (steps) => steps.length === 1),
          a
        )

        // While A's runner holds the run (this process is alive): refused, naming A and the process.
        const refused = yield* Effect.provide(runCommand({ _tag: "resume", runId }), b)
        expect(refused.isError).toBe(true)
        expect(refused.details.error).toBe("RunLiveElsewhere")
        expect(refused.text).toContain(`is live in session sA, run by Pi process ${process.pid}`)
        const stillA = yield* Effect.provide(
          Effect.flatMap(RunStore, (runs) => runs.get(runId)),
          a
        )
        expect(stillA._tag === "Some" && stillA.value.targetSessionId).toBe("sA")

        // A quits: its run is parked. B adopts it.
        yield* Scope.close(scopeA, Exit.void)
        const adopted = yield* Effect.provide(runCommand({ _tag: "resume", runId }), b)
        expect(adopted.isError).toBe(false)
        expect(adopted.text).toMatch(
          new RegExp(`^Adopted run ${runId} .* from session sA: it belongs to this session now`)
        )
        expect(adopted.details.adoptedFrom).toBe("sA")
        const steps = yield* Effect.provide(
          eventually(sentOfType(STEP), (sent) => sent.length === 1),
          b
        )
        expect(steps[0]?.message.details?.runId).toBe(runId)
        const list = yield* Effect.provide(runCommand({ _tag: "list", all: true }), b)
        expect(list.text.split("\n").find((line) => line.includes(runId))).toMatch(
          /· running · this session ·/
        )

        // A reopened: its session start sends nothing for the run; its tool cannot touch it.
        const reopened = yield* sessionApp(location, "sA")
        yield* Effect.provide(onSessionStart, reopened)
        const requestId = yield* Effect.provide(lastRequestId, b)
        const foreign = yield* Effect.provide(runTool({ _tag: "status", runId }), reopened)
        expect(foreign.details.error).toBe("ForeignRun")
        const foreignSubmit = yield* Effect.provide(
          runTool({ _tag: "submit", requestId, output: { hi: 1 } }),
          reopened
        )
        expect([foreignSubmit.details.error, foreignSubmit.details.ownerSessionId]).toEqual([
          "ForeignRun",
          "sB"
        ])
        const noRun = yield* Effect.provide(runTool({ _tag: "cancel" }), reopened)
        expect(noRun.details.error).toBe("NoActiveRun")

        // B's model submits: the run completes, and its one terminal turn is B's.
        const submitted = yield* Effect.provide(runTool({ _tag: "submit", requestId, output: { hi: 1 } }), b)
        expect(submitted.isError).toBe(false)
        // The model's turn on the step ends.
        yield* Context.get(b, PiSessionFake).settle({ aborted: false })
        yield* Effect.provide(
          eventually(sentOfType(PRESENTATION), (sent) => sent.length === 1),
          b
        )
        yield* Effect.sleep("200 millis")
        expect(yield* Effect.provide(sentOfType(PRESENTATION), b)).toHaveLength(1)
        expect(
          (yield* Context.get(reopened, PiSessionFake).sent).filter(
            (r) => r.message.customType !== "pi-workflows-notification"
          )
        ).toEqual([])
        const status = yield* Effect.provide(
          Effect.flatMap(RunStore, (runs) => runs.events(runId)),
          b
        )
        expect(
          status.map((e) => [e.kind, e.adoption?.fromSessionId ?? null, e.adoption?.toSessionId ?? null])
        ).toContainEqual(["adopted", "sA", "sB"])
      }).pipe(Effect.scoped)
  )

  it.live(
    "a waiting run: answering from another session is refused with the way to move it; adopted, it is presented and answered there",
    () =>
      Effect.gen(function* () {
        const ask = {
          name: "ask",
          startAt: "question",
          nodes: {
            question: { type: "wait", prompt: "Which colour?" },
            use: { type: "compute", run: () => "used" }
          },
          edges: [{ from: "question", to: "use" }]
        }
        const location = yield* freshLocation
        const scopeA = yield* Scope.make()
        const a = yield* Scope.extend(sessionApp(location, "sA", [ask]), scopeA)
        const b = yield* sessionApp(location, "sB", [ask])
        const started = yield* Effect.provide(runCommand({ _tag: "start", workflow: "ask", input: null }), a)
        const runId = runIdOf(started.details)
        yield* Effect.provide(onSessionStart, a)
        yield* Effect.provide(
          eventually(sentOfType(PRESENTATION), (sent) => sent.length === 1),
          a
        )
        const there = yield* Effect.provide(runCommand({ _tag: "answer", runId, text: "red" }), b)
        expect(there.isError).toBe(true)
        expect(there.text).toContain(`waits in session sA; answer it there`)
        expect(there.text).toContain(`/workflow resume ${runId}`)

        // A quits; B adopts the run, which keeps waiting and is presented in B.
        yield* Scope.close(scopeA, Exit.void)
        const adopted = yield* Effect.provide(runCommand({ _tag: "resume", runId }), b)
        expect(adopted.isError).toBe(false)
        expect(adopted.details.adoptedFrom).toBe("sA")
        const presented = yield* Effect.provide(
          eventually(sentOfType(PRESENTATION), (sent) => sent.length === 1),
          b
        )
        expect(presented[0]?.message.details).toMatchObject({ runId, state: "waiting" })
        const answered = yield* Effect.provide(runCommand({ _tag: "answer", runId, text: "red" }), b)
        expect(answered.isError).toBe(false)
        const ended = yield* Effect.provide(
          eventually(
            Effect.orDie(Effect.flatMap(RunStore, (runs) => runs.get(runId))),
            (run) => run._tag === "Some" && run.value.state === "completed"
          ),
          b
        )
        expect(ended._tag === "Some" && ended.value.targetSessionId).toBe("sB")
      }).pipe(Effect.scoped)
  )

  it.live("an ended run cannot be adopted; a run of this session resumes as before", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const a = yield* sessionApp(location, "sA")
      const b = yield* sessionApp(location, "sB")
      const started = yield* Effect.provide(runCommand({ _tag: "start", workflow: "greet", input: null }), a)
      const runId = runIdOf(started.details)
      yield* Effect.provide(runCommand({ _tag: "cancel", runId }), a)
      const ended = yield* Effect.provide(runCommand({ _tag: "resume", runId }), b)
      expect(ended.isError).toBe(true)
      expect(ended.text).toContain("an ended run cannot be adopted")
      const own = yield* Effect.provide(runCommand({ _tag: "resume", runId }), a)
      expect(own.text).toContain("it has already ended")
      expect(own.text).not.toContain("adopted")
    }).pipe(Effect.scoped)
  )
})
