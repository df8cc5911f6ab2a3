/** The fallback's pure policy: which routes each timed-out stage allows, and the budget count. */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import {
  budgetAtGuard,
  budgetOf,
  MAX_FALLBACKS,
  allowedRoutes,
  checkRoute,
  ROUTES,
  STAGES
} from "../../src/builtins/fallback.ts"
import type { VisitRecord } from "../../src/engine/definition.ts"

describe("fallback routes against the timed-out stage", () => {
  it("allows going back, repeating, and one stage forward; never skipping", () => {
    expect(Object.fromEntries(STAGES.map((stage) => [stage, allowedRoutes(stage)]))).toEqual({
      redesign: ["retry", "replan", "blocked"],
      implement: ["retry", "verify", "replan", "blocked"],
      verifyPlan: ["retry", "verify", "replan", "blocked"],
      verifyRun: ["retry", "verify", "replan", "blocked"],
      publish: ["retry", "verify", "review", "replan", "blocked"],
      review: ["retry", "verify", "review", "ci", "replan", "blocked"],
      ci: ["retry", "verify", "review", "ci", "deliver", "replan", "blocked"],
      finalizeDelivery: ["retry", "verify", "review", "ci", "deliver", "replan", "blocked"]
    })
  })

  it("names what a rejected route would skip", () => {
    expect(checkRoute("redesign", "verify")).toEqual(
      Either.left(
        'fallback route "verify" is not allowed after a timeout in "redesign": it would skip implementation'
      )
    )
    expect(checkRoute("verifyRun", "review")).toEqual(
      Either.left(
        'fallback route "review" is not allowed after a timeout in "verifyRun": it would skip publication (commit, push, pull request)'
      )
    )
    expect(checkRoute("publish", "deliver")).toEqual(
      Either.left(
        'fallback route "deliver" is not allowed after a timeout in "publish": it would skip review, CI'
      )
    )
  })

  it("resolves each route to its stage", () => {
    expect(ROUTES.map((route) => Either.getOrNull(checkRoute("finalizeDelivery", route)))).toEqual([
      "finalizeDelivery",
      "verifyPlan",
      "review",
      "ci",
      "finalizeDelivery",
      "redesign",
      null
    ])
  })
})

const visit = (nodeId: string, outcome: VisitRecord["outcome"], n = 0): VisitRecord => ({
  nodeId,
  outcome,
  attemptId: `att-${nodeId}-${n}`,
  ...(outcome === "timed_out" ? { error: "timed out after 1 ms" } : {})
})

describe("the fallback budget", () => {
  it("counts finished fallback visits and lists every timeout", () => {
    const history = [
      visit("start", "ok"),
      visit("implement", "timed_out", 1),
      visit("fallbackGuard", "ok", 1),
      visit("fallback", "ok", 1),
      visit("fallbackRoute", "ok", 1),
      visit("publish", "timed_out", 2)
    ]
    const budget = budgetOf(history)
    expect(budget).toEqual({
      next: "fallback",
      used: 1,
      limit: MAX_FALLBACKS,
      source: { nodeId: "publish", attemptId: "att-publish-2", error: "timed out after 1 ms" },
      timeouts: [
        { nodeId: "implement", attemptId: "att-implement-1", error: "timed out after 1 ms" },
        { nodeId: "publish", attemptId: "att-publish-2", error: "timed out after 1 ms" }
      ]
    })
    expect(budgetAtGuard([...history, visit("fallbackGuard", "ok", 2)])).toEqual(budget)
  })

  it("is exhausted after three fallbacks, whatever else ran", () => {
    const history = [1, 2, 3].flatMap((n) => [visit("ci", "timed_out", n), visit("fallback", "ok", n)])
    expect(budgetOf([...history, visit("ci", "timed_out", 4)]).next).toBe("exhausted")
    expect(budgetOf([...history.slice(0, 4), visit("ci", "timed_out", 4)]).next).toBe("fallback")
  })

  it("refuses to run when the visit before it is not a timed-out stage", () => {
    expect(() => budgetOf([])).toThrow(/expects a timed-out stage/)
    expect(() => budgetOf([visit("implement", "ok")])).toThrow(/"implement" \(ok\)/)
    expect(() => budgetOf([visit("afterCi", "timed_out")])).toThrow(/expects a timed-out stage/)
    expect(() => budgetAtGuard([visit("implement", "timed_out")])).toThrow(/no fallback guard/)
  })
})
