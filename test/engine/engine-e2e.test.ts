/**
 * End to end: the complete example from docs/workflows.md, loaded as a `.workflow.mjs` module,
 * runs with the recording coordinator: agent → compute → agent with a switch on
 * $result.outcome → (timeout route) agent → compute → presentation.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { decodeSnapshot } from "../../src/engine/registry.ts"
import { tempDir } from "../support/temp-db.ts"
import { eventTags, makeHarness, SESSION } from "./support/harness.ts"

const docs = readFileSync(new URL("../../docs/workflows.md", import.meta.url), "utf8")
const example = /<!-- example:release-notes -->\n```js\n([\s\S]*?)```/.exec(docs)?.[1] ?? ""

const loadExample = Effect.gen(function* () {
  const dir = yield* tempDir()
  const file = join(dir, "release-notes.workflow.mjs")
  writeFileSync(file, example)
  const module = (yield* Effect.promise(() => import(pathToFileURL(file).href))) as { default: unknown }
  return { definition: module.default, source: example, origin: file }
})

type Prompt = {
  readonly kind?: string
  readonly turnIntentId?: string
  readonly message: { readonly content: string; readonly details: Readonly<Record<string, unknown>> }
}
const requestId = (prompt: Prompt) => String(prompt.message.details.requestId)
const notes = ["Faster startup", "Fixed the crash when the config file is empty"]

describe("end to end: the documented example", () => {
  it("the docs contain the example", () => {
    expect(example).toContain('name: "release-notes"')
  })

  it.scoped("a review timeout routes to recovery; the run completes with a presentation", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [yield* loadExample] })
      const refused = yield* Effect.flip(
        h.engine.start({ workflow: "release-notes", input: {}, sessionId: SESSION, origin: "tool" })
      )
      expect(refused.message).toMatch(/input needs a version string/)
      const started = yield* h.engine.start({
        workflow: "release-notes",
        input: { version: "1.4.0" },
        sessionId: SESSION,
        origin: "tool"
      })
      const runId = started.runId
      yield* h.engine.activate(SESSION)

      // draft: a bad answer is refused and the step keeps waiting; a good one is accepted.
      const draft = (yield* h.coordinator.take) as Prompt
      expect(draft.message.content).toContain("Draft the release notes for version 1.4.0")
      expect(draft.message.content).toContain(`"requestId": "${requestId(draft)}"`)
      expect(draft.message.details).toMatchObject({
        schema: "pi-workflows.agent-step.v1",
        runId,
        nodeId: "draft"
      })
      const bad = yield* Effect.flip(
        h.engine.submit({ sessionId: SESSION, requestId: requestId(draft), output: { notes: "x" } })
      )
      expect(bad.message).toMatch(/output must be \{notes: string\[\]\}/)
      yield* h.engine.submit({ sessionId: SESSION, requestId: requestId(draft), output: { notes } })

      // measure runs, then review asks with the measured count and times out after 10 minutes.
      const review = (yield* h.coordinator.take) as Prompt
      expect(review.message.content).toContain("Review the 2 draft notes (0 are over 120 characters)")
      yield* TestClock.adjust(10 * 60_000)

      // The timeout interrupts the turn; the recovery prompt is its natural successor.
      const recover = (yield* h.coordinator.take) as Prompt
      expect(recover.kind).toBe("workflowPrompt")
      expect(recover.message.details.nodeId).toBe("recover")
      expect(recover.message.content).toContain("The review step timed out (timed out after 10m)")
      expect(eventTags(yield* h.events)).toEqual(["ActiveTurnInterrupted:timedOut"])
      const afterPrompt = Option.getOrThrow(yield* h.store.get(runId))
      expect([afterPrompt.abort?.cause, afterPrompt.abort?.nodeId, afterPrompt.abortPending]).toEqual([
        "timedOut",
        "review",
        false
      ])

      // An hour later (no limit on recover) the model answers; publish completes the run.
      yield* TestClock.adjust(60 * 60_000)
      yield* h.engine.submit({
        sessionId: SESSION,
        requestId: requestId(recover),
        output: { approved: true, reason: "fine" }
      })
      const done = yield* h.engine.await(runId)
      expect([done.state, done.result]).toEqual(["completed", { version: "1.4.0", notes, approved: true }])
      const presentation = (yield* h.coordinator.take) as Prompt
      expect(presentation.kind).toBe("presentation")
      expect(presentation.message).toMatchObject({
        customType: "pi-workflows-presentation",
        content:
          "Release notes for 1.4.0 (approved):\n- Faster startup\n- Fixed the crash when the config file is empty",
        details: { schema: "pi-workflows.presentation.v1", runId, state: "completed" }
      })
      // The completed run's terminal turn intent; the presentation is its natural delivery.
      expect(eventTags(yield* h.events)).toEqual(["ActiveTurnInterrupted:timedOut", "RunTerminal:completed"])
      expect(presentation.turnIntentId).toMatch(/^deferred-turn:/)

      const status = yield* h.engine.status(runId)
      expect(status.stepRecords.map((s) => [s.nodeId, s.outcome, s.timeoutMs])).toEqual([
        ["draft", "ok", 1_800_000],
        ["measure", "ok", 900_000],
        ["review", "timed_out", 600_000],
        ["recover", "ok", null],
        ["publish", "ok", 900_000]
      ])
      expect(new Set(status.stepRecords.map((s) => s.attemptId)).size).toBe(5)
      const snapshot = yield* decodeSnapshot(Option.getOrThrow(yield* h.store.get(runId)).snapshot)
      expect(snapshot.nodes.recover).toEqual({ type: "agent", timeoutMs: null })
      expect(snapshot.nodes.review).toEqual({ type: "agent", timeoutMs: 600_000 })
      expect(snapshot.nodes.measure).toEqual({ type: "compute" })
    })
  )

  it.scoped("a timely review takes the ok route", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [yield* loadExample] })
      const runId = yield* h.launch("release-notes", { version: "2.0.0" })
      yield* h.engine.submit({
        sessionId: SESSION,
        requestId: requestId((yield* h.coordinator.take) as Prompt),
        output: { notes }
      })
      const review = (yield* h.coordinator.take) as Prompt
      yield* TestClock.adjust(9 * 60_000)
      yield* h.engine.submit({
        sessionId: SESSION,
        requestId: requestId(review),
        output: { approved: false, reason: "typo" }
      })
      const done = yield* h.engine.await(runId)
      expect([done.state, done.result]).toEqual(["completed", { version: "2.0.0", notes, approved: false }])
      expect((yield* h.engine.status(runId)).stepRecords.map((s) => s.nodeId)).toEqual([
        "draft",
        "measure",
        "review",
        "publish"
      ])
      expect(eventTags(yield* h.events)).toEqual(["RunTerminal:completed"])
    })
  )
})
