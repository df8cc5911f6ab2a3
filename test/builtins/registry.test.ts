/** The built-ins are registered before project files, listed with their revisions, and keep their names. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { runCommand as runCommandAction } from "../../src/app/command.ts"
import { runTool } from "../../src/app/tool.ts"
import { collectWorkflows } from "../../src/app/workflows.ts"
import { AUTOIMPLEMENT_REVISION } from "../../src/builtins/autoimplement.ts"
import { builtinWorkflows } from "../../src/builtins/index.ts"
import { MONITOR_REVISION } from "../../src/builtins/monitor.ts"
import { buildApp } from "../app/support.ts"

describe("built-in workflows", () => {
  it("come first; a project file reusing a built-in name is a load error and the built-in stays", () => {
    const set = collectWorkflows(builtinWorkflows, [
      {
        _tag: "Loaded",
        file: "/p/autoimplement.workflow.mjs",
        value: {
          name: "autoimplement",
          startAt: "a",
          nodes: { a: { type: "compute", run: () => 1 } },
          edges: []
        },
        sourceHash: "ab"
      }
    ])
    expect(set.entries.map((entry) => entry.origin)).toEqual(["built-in", "built-in"])
    expect(set.errors).toEqual([
      '/p/autoimplement.workflow.mjs: workflow "autoimplement" is already defined by built-in'
    ])
  })

  it.scoped("`workflow list` and `/workflow list` show both with their revisions", () =>
    Effect.gen(function* () {
      const context = yield* Layer.build(buildApp(collectWorkflows(builtinWorkflows, []).entries))
      const tool = yield* Effect.provide(runTool({ _tag: "list" }), context)
      expect(tool.details).toEqual({ workflows: ["autoimplement", "monitor"] })
      expect(tool.text).toContain(
        `- autoimplement (revision ${AUTOIMPLEMENT_REVISION}) — Implement a task end to end`
      )
      expect(tool.text).toContain(
        `- monitor (revision ${MONITOR_REVISION}) — Wait for an authorized external condition`
      )
      const command = yield* Effect.provide(runCommandAction({ _tag: "list" }), context)
      expect(command.text).toBe(tool.text)
    })
  )
})
