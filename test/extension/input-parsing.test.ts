import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { parseCommand } from "../../src/app/command.ts"
import { failed } from "../../src/app/replies.ts"
import { MAX_JSON_DEPTH } from "../../src/domain/text.ts"
import { decodeToolInput } from "../../src/app/tool.ts"
import { prepareToolArguments } from "../../src/extension/tool-parameters.ts"

const left = <A>(e: Either.Either<A, string>): string => (Either.isLeft(e) ? e.left : "RIGHT")

describe("workflow tool input", () => {
  it("decodes every action", () => {
    expect(decodeToolInput({ action: "list" })).toEqual(Either.right({ _tag: "list" }))
    expect(decodeToolInput({ action: "start", workflow: "w", input: { a: 1 } })).toEqual(
      Either.right({ _tag: "start", workflow: "w", input: { a: 1 } })
    )
    expect(decodeToolInput({ action: "status" })).toEqual(Either.right({ _tag: "status" }))
    expect(decodeToolInput({ action: "cancel", runId: "r" })).toEqual(
      Either.right({ _tag: "cancel", runId: "r" })
    )
    expect(decodeToolInput({ action: "submit", requestId: "q", output: null })).toEqual(
      Either.right({ _tag: "submit", requestId: "q", output: null })
    )
  })

  it.each([
    [{}, /action.*required/],
    [null, /action.*required/],
    [{ action: "explode" }, /unknown action/],
    [{ action: "start" }, /workflow start/],
    [{ action: "start", workflow: "" }, /non-empty/],
    [{ action: "start", workflow: "x".repeat(513) }, /512/],
    [{ action: "submit", requestId: "q" }, /output.*required/],
    [{ action: "submit", output: 1 }, /requestId/],
    [{ action: "list", extra: 1 }, /extra/],
    [{ action: "cancel", runId: 5 }, /runId/]
  ])("rejects %j with a clear message", (params, pattern) => {
    expect(left(decodeToolInput(params))).toMatch(pattern)
  })
})

describe("/workflow command arguments", () => {
  it("parses each subcommand", () => {
    expect(parseCommand("")).toEqual(Either.right({ _tag: "list" }))
    expect(parseCommand("start demo")).toEqual(Either.right({ _tag: "start", workflow: "demo", input: null }))
    expect(parseCommand('start demo {"scope": "a b"}')).toEqual(
      Either.right({ _tag: "start", workflow: "demo", input: { scope: "a b" } })
    )
    expect(parseCommand("status")).toEqual(Either.right({ _tag: "status", runId: undefined }))
    expect(parseCommand("cancel r1")).toEqual(Either.right({ _tag: "cancel", runId: "r1" }))
    expect(parseCommand(" pause ")).toEqual(Either.right({ _tag: "pause", runId: undefined }))
    expect(parseCommand("resume r2")).toEqual(Either.right({ _tag: "resume", runId: "r2" }))
    expect(parseCommand("list --all")).toEqual(Either.right({ _tag: "list", all: true }))
  })

  it("explains bad arguments", () => {
    expect(left(parseCommand("start"))).toMatch(/needs a workflow name/)
    expect(left(parseCommand("start demo {bad"))).toMatch(/not valid JSON/)
    expect(left(parseCommand("fly"))).toMatch(/unknown subcommand "fly"/)
    expect(left(parseCommand("cancel a b"))).toMatch(/usage/)
    expect(left(parseCommand("list x"))).toMatch(/usage/)
    expect(left(parseCommand("list --all x"))).toMatch(/usage/)
  })
})

/** The number of code points of a reply: the unit every bound counts in. */
const chars = (text: string) => [...text].length

const nested = (levels: number, leaf: unknown = 1): unknown => {
  let value = leaf
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? { a: value } : [value]
  return value
}

describe("bounded tool errors", () => {
  it("a 5 MB unknown action is quoted by a short prefix and its size", () => {
    const error = left(decodeToolInput({ action: "x".repeat(5_000_000) }))
    expect(error).toBe(
      `workflow: unknown action "${"x".repeat(40)}"… (5,000,000 characters) (one of list, start, status, cancel, submit, progress, restart, answer)`
    )
  })

  it("20,000 unknown parameters are named three at a time and counted", () => {
    const params: Record<string, unknown> = { action: "list" }
    for (let i = 0; i < 20_000; i++) params[`p${i}`] = i
    expect(left(decodeToolInput(params))).toBe(
      "workflow list: p0, p1, p2 and 19,997 more unknown parameters are not parameters of this action"
    )
    expect(left(decodeToolInput({ action: "list", a: 1, b: 2 }))).toBe(
      "workflow list: a and b are not parameters of this action"
    )
  })

  it("a long or invisible parameter name and a huge wrong-typed value are quoted shortly", () => {
    const error = left(
      decodeToolInput({ action: "start", workflow: { big: "y".repeat(1_000_000) }, ["k".repeat(10_000)]: 1 })
    )
    expect(error).toBe(
      `workflow start: workflow must be a string, not an object; "${"k".repeat(40)}"… (10,000 characters) is not a parameter of this action`
    )
    expect(left(decodeToolInput({ action: "\u202eevil\u200b" }))).toMatch(
      /^workflow: unknown action "\\u202eevil\\u200b" /
    )
  })

  it("a quote never cuts a surrogate pair and counts code points", () => {
    const error = left(decodeToolInput({ action: "😀".repeat(100) }))
    expect(error).toContain(`"${"😀".repeat(40)}"… (100 characters)`)
    expect(error).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
  })

  it.each([
    ["input of start", { action: "start", workflow: "w", input: nested(5_000) }, "input"],
    ["output of submit", { action: "submit", requestId: "q", output: nested(65) }, "output"],
    ["an unknown field", { action: "status", junk: nested(100_000) }, "junk"]
  ])("deep JSON in %s is refused up front, naming the field and the limit", (_what, params, field) => {
    const action = String(params.action)
    expect(left(decodeToolInput(params))).toBe(
      `workflow ${action}: ${field} nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep; ` +
        `at most ${MAX_JSON_DEPTH} levels are accepted, so send flatter JSON`
    )
  })

  it("JSON exactly at the depth limit is accepted", () => {
    expect(decodeToolInput({ action: "start", workflow: "w", input: nested(MAX_JSON_DEPTH) })).toEqual(
      Either.right({ _tag: "start", workflow: "w", input: nested(MAX_JSON_DEPTH) })
    )
  })

  it("Pi's argument preparation refuses what Pi's validation would echo, with the same bounded line", () => {
    const refusal = (args: unknown) => {
      try {
        prepareToolArguments(args)
        return "ACCEPTED"
      } catch (error) {
        return error instanceof Error ? error.message : String(error)
      }
    }
    expect(refusal({ action: "x".repeat(5_000_000) })).toBe(
      left(decodeToolInput({ action: "x".repeat(5_000_000) }))
    )
    expect(refusal({ action: "start", workflow: "w", input: nested(5_000) })).toMatch(/input nests arrays/)
    expect(refusal({ action: "cancel", runId: ["r".repeat(1_000_000)] })).toBe(
      "workflow cancel: runId must be a string, not an array of 1 item"
    )
    // The refusal reaches the model: a credential the model itself sent is not repeated.
    expect(refusal({ action: "ghp_0123456789abcdefghijABCDEFGHIJ012345" })).not.toContain("ghp_0123")
    // What Pi accepts (or coerces, like a number for a string) passes through unchanged.
    const fine = { action: "cancel", runId: 5 }
    expect(prepareToolArguments(fine)).toBe(fine)
  })

  it("every failure reply is at most 2,000 code points and never cuts a surrogate pair", () => {
    const reply = failed("start", new Error("😀".repeat(5_000)))
    expect(chars(reply.text)).toBe(2_000)
    expect(reply.text.endsWith("😀…")).toBe(true)
  })
})

describe("/workflow command bounds", () => {
  it("refuses deep JSON input and quotes an unknown subcommand shortly", () => {
    expect(left(parseCommand(`start demo ${"[".repeat(5_000)}${"]".repeat(5_000)}`))).toBe(
      `/workflow start: the input nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep; at most ${MAX_JSON_DEPTH} levels are accepted`
    )
    expect(chars(left(parseCommand("z".repeat(100_000))))).toBeLessThan(300)
  })
})
