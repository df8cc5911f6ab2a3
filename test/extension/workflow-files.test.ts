import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { listWorkflowFiles, loadWorkflowFiles } from "../../src/extension/workflow-files.ts"

const cwd = mkdtempSync(join(tmpdir(), "pwt-wf-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const dir = join(cwd, ".pi", "workflows")
mkdirSync(dir, { recursive: true })
writeFileSync(join(dir, "a.workflow.mjs"), `export default { name: "a" }\n`)
writeFileSync(join(dir, "b.workflow.ts"), `const n: string = "b"\nexport default { name: n }\n`)
writeFileSync(join(dir, "broken.workflow.js"), `export default {{{\n`)
writeFileSync(join(dir, "nodefault.workflow.mjs"), `export const x = 1\n`)
writeFileSync(join(dir, "notes.md"), `ignored`)

describe("workflow file discovery", () => {
  it("lists only *.workflow.{ts,mjs,js}, sorted", () => {
    expect(listWorkflowFiles(cwd).map((f) => f.slice(dir.length + 1))).toEqual([
      "a.workflow.mjs",
      "b.workflow.ts",
      "broken.workflow.js",
      "nodefault.workflow.mjs"
    ])
  })

  it("loads good files and names the broken ones without stopping", async () => {
    const loaded = await loadWorkflowFiles(cwd)
    const byName = new Map(loaded.map((l) => [l.file.slice(dir.length + 1), l]))
    expect(byName.get("a.workflow.mjs")).toMatchObject({ _tag: "Loaded", value: { name: "a" } })
    expect(byName.get("b.workflow.ts")).toMatchObject({ _tag: "Loaded", value: { name: "b" } })
    const broken = byName.get("broken.workflow.js")
    expect(broken?._tag).toBe("LoadError")
    expect(broken?._tag === "LoadError" && broken.message).toContain("broken.workflow.js")
    const noDefault = byName.get("nodefault.workflow.mjs")
    expect(noDefault?._tag === "LoadError" && noDefault.message).toMatch(/no default export/)
  })

  it("returns nothing when the directory is missing", () => {
    expect(listWorkflowFiles(join(cwd, "nope"))).toEqual([])
  })
})
