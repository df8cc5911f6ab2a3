/**
 * Autoimplement's timeout fallback on the real engine (scripted model, TestClock): every route,
 * route rejection, schema refusal, the three-fallback budget across a takeover, and a fallback
 * that fails or times out.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { autoimplement } from "../../src/builtins/autoimplement.ts"
import { MAX_FALLBACKS, type Stage } from "../../src/builtins/fallback.ts"
import { makeHarness, SESSION } from "../engine/support/harness.ts"
import { drive, HAPPY, LONG_LEASE, limitOf, type Script, submit, TIME_OUT } from "./support.ts"
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
const _upTo = (stage: Stage) =>
  stage === "redesign" ? ["redesign"] : HAPPY.slice(0, HAPPY.indexOf(stage) + 1)

const stepsOf = (status: {
  readonly stepRecords: ReadonlyArray<{ nodeId: string; outcome: string | null }>
}) => status.stepRecords.map((step) => `${step.nodeId}:${step.outcome}`)

describe("autoimplement: fallback routes", () => {
  const cases: ReadonlyArray<readonly [string, Stage, string]> = [
    ["retry", "implement", "implement"],
    ["verify", "implement", "verifyPlan"],
    ["review", "publish", "review"],
    ["ci", "review", "ci"],
    ["deliver", "ci", "finalizeDelivery"],
    ["replan", "verifyRun", "redesign"]
  ]
  for (const [route, source, target] of cases) {
    it.scoped(`${route} after a timeout in ${source} continues at ${target} and the run completes`, () =>
      Effect.gen(function* () {
        const h = yield* harness()
        const script: Script = (node, visit) =>
          node === source && visit === 1
            ? TIME_OUT
            : node === "fallback"
              ? submit(fallbackSays(route))
              : undefined
        const run = yield* drive(h, yield* h.launch("autoimplement", TASK), script)
        const after = run.prompts.slice(run.prompts.indexOf("fallback") + 1)
        expect(after[0]).toBe(target)
        expect(run.texts[run.prompts.indexOf("fallback") + 1]).toContain(`"route": "${route}"`)
        expect([run.state, (run.result as { status: string }).status]).toEqual(["completed", "delivered"])
        expect(run.result).toMatchObject({ timeouts: [{ nodeId: source }], fallbacks: [{ route }] })
      })
    )
  }

  it.scoped("blocked ends the run with the blocked result and the timeout history", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const run = yield* drive(h, yield* h.launch("autoimplement", TASK), (node) =>
        node === "ci" ? TIME_OUT : node === "fallback" ? submit(fallbackSays("blocked")) : undefined
      )
      expect(run.result).toMatchObject({
        status: "blocked",
        timeouts: [{ nodeId: "ci", error: `timed out after ${duration(HOUR)}` }],
        fallbacks: [{ route: "blocked", reason: "chose blocked" }]
      })
    })
  )

  it.scoped("a route that would skip a required stage is rejected with a clear error", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const run = yield* drive(h, yield* h.launch("autoimplement", TASK), (node) =>
        node === "implement" ? TIME_OUT : node === "fallback" ? submit(fallbackSays("review")) : undefined
      )
      expect(run.state).toBe("failed")
      expect(run.error).toMatchObject({
        nodeId: "fallbackRoute",
        original:
          'fallback route "review" is not allowed after a timeout in "implement": it would skip verification, publication (commit, push, pull request)'
      })
      expect(run.prompts).toEqual(["implement", "fallback"])
    })
  )

  it.scoped("an answer outside the schema is refused and the fallback keeps waiting", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const runId = yield* h.launch("autoimplement", TASK)
      yield* h.coordinator.take
      yield* TestClock.adjust(8 * HOUR)
      const fallback = yield* h.coordinator.take
      const requestId = String(fallback.message.details.requestId)
      const bad = yield* Effect.flip(
        h.engine.submit({
          sessionId: SESSION,
          requestId,
          output: { route: "skip-all", reason: "x", evidence: [] }
        })
      )
      expect(bad._tag === "SubmitRejected" && bad.reason).toBe("invalidOutput")
      expect((yield* h.engine.status(runId)).openRequestId).toBe(requestId)
      yield* h.engine.cancel(runId, { by: "user" })
    })
  )
})

describe("autoimplement: the fallback budget", () => {
  it.scoped("three fallbacks at most; the next timeout ends blocked with the whole timeout history", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const run = yield* drive(h, yield* h.launch("autoimplement", TASK), (node) =>
        node === "implement" ? TIME_OUT : undefined
      )
      expect(run.prompts).toEqual([
        "implement",
        "fallback",
        "implement",
        "fallback",
        "implement",
        "fallback",
        "implement"
      ])
      expect(run.state).toBe("completed")
      const result = run.result as {
        status: string
        reason: string
        timeouts: unknown[]
        fallbacks: unknown[]
      }
      expect(result.status).toBe("blocked")
      expect(result.reason).toBe(
        `a stage timed out after the timeout fallback already ran ${MAX_FALLBACKS} time(s) (limit ${MAX_FALLBACKS})`
      )
      expect(result.timeouts).toHaveLength(4)
      expect(result.fallbacks).toHaveLength(3)
      expect(run.texts[5]).toContain("(3 of at most 3 in this run)")
    })
  )

  it.scoped("the count comes from the step records: a second runner taking over keeps it", () =>
    Effect.gen(function* () {
      const a = yield* harness()
      const runId = yield* a.launch("autoimplement", TASK)
      const firstTwo = ["implement", "fallback", "implement", "fallback"]
      const seen: Array<string> = []
      for (const expected of firstTwo) {
        const message = yield* a.coordinator.take
        seen.push(String(message.message.details.nodeId))
        expect(seen.at(-1)).toBe(expected)
        if (expected === "implement") yield* TestClock.adjust(8 * HOUR)
        else
          yield* a.engine.submit({
            sessionId: SESSION,
            requestId: String(message.message.details.requestId),
            output: fallbackSays("retry")
          })
      }
      // The third implement visit is in flight when this runner hands the run over.
      expect((yield* a.coordinator.take).message.details.nodeId).toBe("implement")
      yield* a.engine.park(runId, "handover")
      const b = yield* makeHarness({ definitions: [autoimplement], config: LONG_LEASE, filename: a.filename })
      yield* b.engine.resume(runId)
      const rest = yield* drive(b, runId, (node) => (node === "implement" ? TIME_OUT : undefined))
      expect(rest.prompts).toEqual(["implement", "fallback", "implement"])
      expect(rest.result).toMatchObject({ status: "blocked" })
      expect((rest.result as { fallbacks: unknown[] }).fallbacks).toHaveLength(3)
    })
  )

  it.scoped("a fallback that fails stops the run; one that times out stops it too (no recursion)", () =>
    Effect.gen(function* () {
      const h = yield* harness()
      const timedOut = yield* drive(h, yield* h.launch("autoimplement", TASK), (node) =>
        node === "implement" || node === "fallback" ? TIME_OUT : undefined
      )
      expect(timedOut.prompts).toEqual(["implement", "fallback"])
      expect(timedOut.state).toBe("timed_out")
      expect(timedOut.error).toMatchObject({
        nodeId: "fallback",
        original: `timed out after ${duration(limitOf("fallback"))}`
      })

      const runId = yield* h.launch("autoimplement", TASK)
      yield* h.coordinator.take
      yield* h.coordinator.failNextSends(1)
      yield* TestClock.adjust(8 * HOUR)
      const failed = yield* drive(h, runId)
      expect(failed.state).toBe("failed")
      expect(stepsOf(failed.status)).toEqual([
        "start:ok",
        "implement:timed_out",
        "fallbackGuard:ok",
        "fallback:failed"
      ])
    })
  )
})
