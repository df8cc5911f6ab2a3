/**
 * Items of the terminal-decision plan's test list not covered elsewhere: ordinary completion
 * causes no automatic restart; the maxSteps failure gets a terminal decision turn instead of
 * silently ending; no code under src/terminal reads anything of the session but workflow
 * message details.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { LaunchStore } from "../../src/store/launch-store.ts"
import {
  buildApp,
  eventually,
  FALLBACK,
  lastRequestId,
  PRESENTATION,
  STEP,
  sentOfType
} from "../app/support.ts"

const loop = {
  name: "loop",
  maxSteps: 3,
  startAt: "a",
  nodes: { a: { type: "compute", run: () => ({ n: 1 }) }, b: { type: "compute", run: () => ({ n: 2 }) } },
  edges: [
    { from: "a", to: "b" },
    { from: "b", to: "a" }
  ]
}
const done = {
  name: "done",
  startAt: "a",
  nodes: { a: { type: "compute", run: () => ({ ok: true }) } },
  edges: []
}

const runs = Effect.flatMap(RunStore, (store) => store.listBySession("s1", 100))

describe("terminal decision test list", () => {
  it.live("ordinary completion: one result turn and no automatic restart", () =>
    Effect.gen(function* () {
      yield* runTool({ _tag: "start", workflow: "done" })
      yield* afterSettle(false)
      yield* eventually(sentOfType(PRESENTATION), (p) => p.length === 1)
      for (let i = 0; i < 3; i++) {
        yield* (yield* PiSessionFake).settle()
        yield* afterSettle(false)
      }
      expect((yield* runs).map((run) => run.state)).toEqual(["completed"])
      expect(yield* sentOfType(PRESENTATION)).toHaveLength(1)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(0)
    }).pipe(Effect.provide(buildApp([done])), Effect.scoped)
  )

  it.live("the maxSteps failure produces a terminal decision turn that offers restart", () =>
    Effect.gen(function* () {
      const started = yield* runTool({ _tag: "start", workflow: "loop" })
      const runId = started.details.runId
      if (typeof runId !== "string") throw new Error("no run id")
      yield* afterSettle(false)
      yield* eventually(
        Effect.orDie(Effect.flatMap(Engine, (engine) => engine.status(runId))),
        (s) => s.state === "failed"
      )
      yield* afterSettle(false)
      const [turn] = yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
      expect(turn?.message.details.reasonKind).toBe("maxSteps")
      expect(turn?.message.content).toContain("the run used up its step budget (maxSteps)")
      expect(turn?.message.content).toContain(`{"action": "restart", "runId": "${runId}"}`)
    }).pipe(Effect.provide(buildApp([loop])), Effect.scoped)
  )

  it.live("a completed run with a blocked result: the model may restart it from its presentation turn", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runTool({ _tag: "start", workflow: "greet" })
      const runId = String(started.details.runId)
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      yield* runTool({ _tag: "submit", requestId: yield* lastRequestId, output: { status: "blocked" } })
      yield* fake.settle()
      const [presentation] = yield* eventually(sentOfType(PRESENTATION), (p) => p.length === 1)
      // The presentation turn is the run's terminal turn: one launch, keyed to its intent.
      const restarted = yield* runTool({ _tag: "restart", runId }, { toolCallId: "call-1" })
      expect(restarted.isError).toBe(false)
      expect(restarted.details).toMatchObject({ launch: "restart", repeated: false })
      const launch = yield* Effect.orDie(
        Effect.flatMap(LaunchStore, (store) => store.get(String(restarted.details.runId)))
      )
      expect(Option.getOrThrow(launch)).toMatchObject({
        terminalRunId: runId,
        terminalIntentId: presentation?.message.details.turnIntentId
      })
      // It starts only after the turn settles.
      expect(yield* sentOfType(STEP)).toHaveLength(1)
      yield* fake.settle()
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 2)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it("src/terminal reads no user message: only workflow message details from the session", () => {
    const dir = fileURLToPath(new URL("../../src/terminal/", import.meta.url))
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), "utf8")
      // The session port only exposes custom messages; nothing here may reach Pi's session directly.
      expect(text, file).not.toMatch(/sessionManager|getBranch|getEntries|role: "user"|userMessage/)
      if (text.includes("session.branch")) {
        expect(file).toBe("launches.ts")
        expect(text).toContain("startsWith(WORKFLOW_MESSAGE)")
      }
    }
  })
})
