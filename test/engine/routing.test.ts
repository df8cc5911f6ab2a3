import { describe, expect, it } from "vitest"
import { Either } from "effect"
import { decide, parseExpression, type Route, type RouteInput } from "../../src/engine/definition.ts"

const expr = (text: string) =>
  Either.getOrElse(parseExpression(text), (problem) => {
    throw new Error(problem)
  })

const onOutcome: Route = {
  _tag: "Switch",
  on: expr("$result.outcome"),
  cases: { ok: "next", timed_out: "fallback", failed: "failure" },
  fallback: null
}

const result = (outcome: RouteInput["outcome"], extra: Partial<RouteInput> = {}): RouteInput => ({
  input: { mode: "fast" },
  outcome,
  output: { verdict: "pass", n: 2 },
  error: outcome === "ok" ? null : "original error",
  ...extra
})

describe("parseExpression", () => {
  it("accepts input, output and result references", () => {
    expect(expr("$")).toMatchObject({ source: "input", path: [] })
    expect(expr("$.a.b")).toMatchObject({ source: "input", path: ["a", "b"] })
    expect(expr("$output")).toMatchObject({ source: "output", path: [] })
    expect(expr("$output.items.0")).toMatchObject({ source: "output", path: ["items", "0"] })
    expect(expr("$result.outcome")).toMatchObject({ source: "result", path: ["outcome"] })
  })

  it.each(["mode", "$.", "$..a", "$outputs.x", "$result", "$result.output", "$.a b", "$.a.$b"])(
    "rejects %s",
    (text) => {
      expect(Either.isLeft(parseExpression(text))).toBe(true)
    }
  )
})

describe("decide", () => {
  it("ok follows a plain edge, or completes the run with no edge", () => {
    expect(decide("a", { _tag: "To", to: "b" }, result("ok"))).toEqual({ _tag: "Next", nodeId: "b" })
    expect(decide("a", undefined, result("ok"))).toEqual({ _tag: "Complete" })
  })

  it("switches on the input, the output and the outcome", () => {
    const onInput: Route = {
      _tag: "Switch",
      on: expr("$.mode"),
      cases: { fast: "f", slow: "s" },
      fallback: null
    }
    expect(decide("a", onInput, result("ok"))).toEqual({ _tag: "Next", nodeId: "f" })
    const onOutput: Route = { _tag: "Switch", on: expr("$output.n"), cases: { "2": "two" }, fallback: null }
    expect(decide("a", onOutput, result("ok"))).toEqual({ _tag: "Next", nodeId: "two" })
    expect(decide("a", onOutcome, result("ok"))).toEqual({ _tag: "Next", nodeId: "next" })
  })

  it("routes every non-cancelled outcome that has a case", () => {
    expect(decide("a", onOutcome, result("timed_out"))).toEqual({ _tag: "Next", nodeId: "fallback" })
    expect(decide("a", onOutcome, result("failed"))).toEqual({ _tag: "Next", nodeId: "failure" })
  })

  it("never routes cancellation, even with a case for it", () => {
    const withCancel: Route = { ...onOutcome, cases: { ...onOutcome.cases, cancelled: "next" } } as Route
    expect(decide("a", withCancel, result("cancelled"))).toEqual({ _tag: "Cancel" })
  })

  it("a value without a case fails the run naming the node and the value", () => {
    const onOutput: Route = {
      _tag: "Switch",
      on: expr("$output.verdict"),
      cases: { fail: "x" },
      fallback: null
    }
    expect(decide("check", onOutput, result("ok"))).toEqual({
      _tag: "Fail",
      message: 'node "check": switch on $output.verdict has no case for value "pass"',
      original: null
    })
    const withDefault: Route = { ...onOutput, fallback: "d" } as Route
    expect(decide("check", withDefault, result("ok"))).toEqual({ _tag: "Next", nodeId: "d" })
  })

  it("keeps the original error when an outcome switch has no case for a failure", () => {
    const okOnly: Route = {
      _tag: "Switch",
      on: expr("$result.outcome"),
      cases: { ok: "next" },
      fallback: "x"
    }
    expect(decide("n", okOnly, result("failed"))).toEqual({
      _tag: "Fail",
      message: 'node "n" failed; switch on $result.outcome has no case for value "failed"',
      original: "original error"
    })
    // A timed-out node without a route ends the run timed out, not failed.
    expect(decide("n", okOnly, result("timed_out"))).toEqual({
      _tag: "TimeOut",
      message: 'node "n" timed out; switch on $result.outcome has no case for value "timed_out"',
      original: "original error"
    })
  })

  it("non-ok outcomes never follow plain edges or switches on other values", () => {
    expect(decide("n", { _tag: "To", to: "b" }, result("failed"))).toEqual({
      _tag: "Fail",
      message: 'node "n" failed: original error',
      original: "original error"
    })
    expect(decide("n", { _tag: "To", to: "b" }, result("timed_out"))._tag).toBe("TimeOut")
    const onInput: Route = { _tag: "Switch", on: expr("$.mode"), cases: { fast: "f" }, fallback: "f" }
    expect(decide("n", onInput, result("failed"))._tag).toBe("Fail")
    expect(decide("n", undefined, result("timed_out"))._tag).toBe("TimeOut")
  })
})
