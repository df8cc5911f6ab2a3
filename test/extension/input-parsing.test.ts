import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { parseCommand } from "../../src/app/command-input.ts"
import { decodeToolInput } from "../../src/app/tool-input.ts"

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
  })

  it("explains bad arguments", () => {
    expect(left(parseCommand("start"))).toMatch(/needs a workflow name/)
    expect(left(parseCommand("start demo {bad"))).toMatch(/not valid JSON/)
    expect(left(parseCommand("fly"))).toMatch(/unknown subcommand "fly"/)
    expect(left(parseCommand("cancel a b"))).toMatch(/usage/)
    expect(left(parseCommand("list x"))).toMatch(/usage/)
  })
})
