import { describe, expect, it } from "vitest"
import { collectWorkflows } from "../../src/app/workflows.ts"
import { greet } from "./support.ts"

describe("collecting workflows from files", () => {
  it("keeps valid files, names every broken or invalid one, and refuses duplicate names", () => {
    const set = collectWorkflows(
      [{ definition: greet, origin: "built-in" }],
      [
        { _tag: "Loaded", file: "/p/a.workflow.mjs", value: { ...greet, name: "a" }, sourceHash: "aa" },
        {
          _tag: "LoadError",
          file: "/p/b.workflow.mjs",
          message: "cannot load /p/b.workflow.mjs: SyntaxError"
        },
        {
          _tag: "Loaded",
          file: "/p/c.workflow.mjs",
          value: { name: "c", startAt: "x", nodes: {}, edges: [] },
          sourceHash: "cc"
        },
        { _tag: "Loaded", file: "/p/d.workflow.mjs", value: greet, sourceHash: "dd" }
      ]
    )
    expect(set.entries.map((e) => e.origin)).toEqual(["built-in", "/p/a.workflow.mjs"])
    expect(set.entries[1]?.sourceHash).toBe("aa")
    expect(set.errors).toHaveLength(3)
    expect(set.errors[0]).toContain("/p/b.workflow.mjs")
    expect(set.errors[1]).toMatch(/^\/p\/c\.workflow\.mjs: /)
    expect(set.errors[2]).toMatch(/"greet" is already defined by built-in/)
  })
})
