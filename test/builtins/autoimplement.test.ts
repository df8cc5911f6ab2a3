/**
 * Autoimplement on the real engine and a real SQLite file, with a scripted model and TestClock:
 * limits, success routes, timeouts entering the fallback, failures and cancellation bypassing
 * it, and the revision check. The fallback's routes and budget are in autoimplement-fallback.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { AUTOIMPLEMENT_REVISION, autoimplement } from "../../src/builtins/autoimplement.ts"
import { STAGES, type Stage } from "../../src/builtins/fallback.ts"
import { snapshotOf } from "../../src/engine/registry.ts"
import { loadWorkflow } from "../../src/engine/validate.ts"
import { makeHarness, SESSION } from "../engine/support/harness.ts"
import { CANCEL, drive, HAPPY, LONG_LEASE, limitOf, OK, type Script, submit, TIME_OUT } from "./support.ts"
import { duration } from "../../src/domain/text.ts"

const HOUR = 3_600_000
const TASK = { task: "add a --verbose flag", plan: "parse the flag, print more", repo: "/tmp/repo" }

const harness = () => makeHarness({ definitions: [autoimplement], config: LONG_LEASE })

const fallbackSays = (route: string): unknown => ({
  route,
  reason: `chose ${route}`,
  evidence: ["inspected"]
})

/** The prompts up to and including `stage` on the happy path. */
const upTo = (stage: Stage) =>
  stage === "redesign" ? ["redesign"] : HAPPY.slice(0, HAPPY.indexOf(stage) + 1)

const stepsOf = (status: {
  readonly stepRecords: ReadonlyArray<{ nodeId: string; outcome: string | null }>
}) => status.stepRecords.map((step) => `${step.nodeId}:${step.outcome}`)

describe("autoimplement: definition", () => {
  it.effect(
    "loads; implement 8 h, finalizeDelivery 30 min, other limits explicit or the default; maxSteps 240",
    () =>
      Effect.gen(function* () {
        const loaded = yield* loadWorkflow(autoimplement)
        const snapshot = snapshotOf(loaded)
        const limits = Object.fromEntries(
          Object.entries(snapshot.nodes)
            .filter(([, node]) => node.type === "agent")
            .map(([id, node]) => [id, node.timeoutMs ?? "default"])
        )
        expect(limits).toEqual({
          redesign: HOUR,
          implement: 8 * HOUR,
          verifyPlan: "default",
          verifyRun: 2 * HOUR,
          publish: "default",
          review: HOUR,
          ci: HOUR,
          finalizeDelivery: 30 * 60_000,
          fallback: "default"
        })
        expect([snapshot.maxSteps, snapshot.revision]).toEqual([240, AUTOIMPLEMENT_REVISION])
      })
  )

  it.scoped("the implement stage runs until 8 h and times out exactly then", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const runId = yield* h.launch("autoimplement", TASK)
      const prompt = yield* h.coordinator.take
      expect(prompt.message.details.nodeId).toBe("implement")
      yield* TestClock.adjust(8 * HOUR - 1)
      expect((yield* h.engine.status(runId)).currentNodeId).toBe("implement")
      yield* TestClock.adjust(1)
      const next = yield* h.coordinator.take
      expect(next.message.details.nodeId).toBe("fallback")
      const steps = (yield* h.engine.status(runId)).stepRecords
      expect(steps[1]).toMatchObject({ nodeId: "implement", outcome: "timed_out", timeoutMs: 8 * HOUR })
      yield* h.engine.cancel(runId, { by: "user" })
    })
  )

  it.scoped("bad input is refused with a clear error and nothing is stored", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const refused = yield* Effect.flip(
        h.engine.start({
          workflow: "autoimplement",
          input: { plan: "x" },
          sessionId: SESSION,
          origin: "tool"
        })
      )
      expect(refused._tag).toBe("InvalidWorkflowInput")
      // What is wrong and what a good input looks like, in plain words.
      expect(refused.message).toBe(
        'input of workflow "autoimplement" is invalid: task is missing; an input it accepts looks like {"task":"…"}'
      )
      expect(yield* h.engine.list(SESSION)).toEqual([])
    })
  )
})

describe("autoimplement: success routes", () => {
  it.scoped("with a plan: implement → verify → publish → review → CI → deliver; delivered result", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const run = yield* drive(h, yield* h.launch("autoimplement", TASK))
      expect(run.prompts).toEqual(HAPPY)
      expect(run.state).toBe("completed")
      expect(run.result).toMatchObject({ status: "delivered", report: "merged", timeouts: [], fallbacks: [] })
      expect(run.texts[0]).toContain("parse the flag, print more")
    })
  )

  it.scoped("without a plan the run writes one first, and later prompts carry it", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const run = yield* drive(h, yield* h.launch("autoimplement", { task: "t" }))
      expect(run.prompts).toEqual(["redesign", ...HAPPY])
      expect(run.texts[1]).toContain("Approved plan: new plan")
    })
  )

  it.scoped("failed verification, requested changes and red CI go back to implement with the findings", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const script: Script = (node, visit) => {
        if (node === "verifyRun" && visit === 1) return submit({ passed: false, evidence: ["test x fails"] })
        if (node === "review" && visit === 1)
          return submit({ ...(OK.review as object), verdict: "changes", findings: ["rename y"] })
        if (node === "ci" && visit === 1)
          return submit({ ...(OK.ci as object), state: "failed", evidence: ["lint red"] })
        return undefined
      }
      const run = yield* drive(h, yield* h.launch("autoimplement", TASK), script)
      const loop = ["implement", "verifyPlan", "verifyRun"]
      expect(run.prompts).toEqual([
        ...loop,
        ...loop,
        "publish",
        "review",
        ...loop,
        "publish",
        "review",
        "ci",
        ...loop,
        "publish",
        "review",
        "ci",
        "finalizeDelivery"
      ])
      const implementTexts = run.texts.filter((_, i) => run.prompts[i] === "implement")
      expect(implementTexts[1]).toContain("test x fails")
      expect(implementTexts[2]).toContain("rename y")
      expect(implementTexts[3]).toContain("lint red")
      expect(run.state).toBe("completed")
    })
  )

  it.scoped("a delivery that did not happen ends not_delivered, not blocked", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const run = yield* drive(h, yield* h.launch("autoimplement", TASK), (node) =>
        node === "finalizeDelivery"
          ? submit({ delivered: false, mergeCommit: null, report: "needs approval" })
          : undefined
      )
      expect(run.result).toMatchObject({ status: "not_delivered", report: "needs approval" })
    })
  )
})

describe("autoimplement: timeouts, failures, cancellation", () => {
  it.scoped("every stage's timeout enters the one fallback with that stage as its source", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      for (const stage of STAGES) {
        const input = stage === "redesign" ? { task: "t" } : TASK
        const script: Script = (node, visit) =>
          node === stage && visit === 1
            ? TIME_OUT
            : node === "fallback"
              ? submit(fallbackSays("blocked"))
              : undefined
        const run = yield* drive(h, yield* h.launch("autoimplement", input), script)
        expect(run.prompts).toEqual([...upTo(stage), "fallback"])
        const fallbackText = run.texts.at(-1) ?? ""
        expect(fallbackText).toContain(`The stage "${stage}" timed out`)
        expect(fallbackText).toContain(`timed out after ${duration(limitOf(stage))}`)
        expect(fallbackText).toContain("Change nothing")
        expect(run.state).toBe("completed")
        expect(run.result).toMatchObject({
          status: "blocked",
          reason: "the timeout fallback found no safe route: chose blocked",
          timeouts: [{ nodeId: stage, error: `timed out after ${duration(limitOf(stage))}` }]
        })
      }
    })
  )

  it.scoped("a failed stage fails the run with its own error and never visits the fallback", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const runId = yield* h.launch("autoimplement", TASK)
      yield* h.coordinator.failNextSends(1)
      const run = yield* drive(h, runId)
      expect(run.prompts).toEqual([])
      expect(run.state).toBe("failed")
      expect(run.error).toMatchObject({
        nodeId: "failure",
        original: "the prompt could not be delivered: scripted send failure"
      })
      expect(stepsOf(run.status)).toEqual(["start:ok", "implement:failed", "failure:failed"])
    })
  )

  it.scoped("cancelling a stage or the fallback ends the run cancelled, without a fallback", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const first = yield* drive(h, yield* h.launch("autoimplement", TASK), (node) =>
        node === "publish" ? CANCEL : undefined
      )
      expect(first.state).toBe("cancelled")
      expect(first.prompts).toEqual(upTo("publish"))
      expect(stepsOf(first.status).at(-1)).toBe("publish:cancelled")
      const second = yield* drive(h, yield* h.launch("autoimplement", TASK), (node) =>
        node === "implement" ? TIME_OUT : node === "fallback" ? CANCEL : undefined
      )
      expect(second.state).toBe("cancelled")
      expect(second.prompts).toEqual(["implement", "fallback"])
    })
  )
})

describe("autoimplement: revisions", () => {
  it.scoped("a run started on an older revision refuses to resume and says to reload Pi", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const runId = yield* h.launch("autoimplement", TASK)
      yield* h.coordinator.take
      yield* h.engine.park(runId, "upgrade")
      yield* h.registry.replaceAll([{ ...autoimplement, revision: AUTOIMPLEMENT_REVISION + 1 }])
      const refused = yield* Effect.flip(h.engine.resume(runId))
      expect(refused._tag).toBe("SourceChanged")
      expect(refused.message).toContain(
        `revision changed from ${AUTOIMPLEMENT_REVISION} to ${AUTOIMPLEMENT_REVISION + 1} since the run started`
      )
      expect(refused.message).toContain("Reload Pi")
      const record = Option.getOrThrow(yield* h.store.get(runId))
      expect([record.state, record.revision]).toEqual(["running", AUTOIMPLEMENT_REVISION])
    })
  )
})
