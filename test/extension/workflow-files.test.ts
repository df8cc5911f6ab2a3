import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { NODE_TS_ARGS } from "../support/node-child.ts"
import { listWorkflowFiles, loadWorkflowFiles, syntaxLocation } from "../../src/extension/workflow-files.ts"

const cwd = mkdtempSync(join(tmpdir(), "pwt-wf-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const dir = join(cwd, ".pi", "workflows")
mkdirSync(dir, { recursive: true })
writeFileSync(join(dir, "a.workflow.mjs"), `export default { name: "a" }\n`)
writeFileSync(join(dir, "b.workflow.ts"), `const n: string = "b"\nexport default { name: n }\n`)
writeFileSync(join(dir, "broken.workflow.js"), `export default {{{\n`)
writeFileSync(join(dir, "nodefault.workflow.mjs"), `export const x = 1\n`)
writeFileSync(join(dir, "notes.md"), `ignored`)
const typo = `export default {\n  name: "t",\n  nodes: { a: { type: "agent" prompt: "y" } }\n}\n`
writeFileSync(join(dir, "typo.workflow.mjs"), typo)
writeFileSync(join(dir, "typo-ts.workflow.ts"), typo)

describe("workflow file discovery", () => {
  it("lists only *.workflow.{ts,mjs,js}, sorted", () => {
    expect(listWorkflowFiles(cwd).map((f) => f.slice(dir.length + 1))).toEqual([
      "a.workflow.mjs",
      "b.workflow.ts",
      "broken.workflow.js",
      "nodefault.workflow.mjs",
      "typo-ts.workflow.ts",
      "typo.workflow.mjs"
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

  it("names file, line and column of a syntax error (JavaScript and TypeScript)", () => {
    // Node's own loader, as in Pi: the test runner would intercept an import made here.
    const source = join(
      dirname(fileURLToPath(import.meta.url)),
      "..",
      "..",
      "src",
      "extension",
      "workflow-files.ts"
    )
    const script = `import { loadWorkflowFiles } from ${JSON.stringify(source)}
      console.log(JSON.stringify(await loadWorkflowFiles(${JSON.stringify(cwd)})))`
    const out = execFileSync(process.execPath, [...NODE_TS_ARGS, "--input-type=module", "-e", script], {
      encoding: "utf8"
    })
    const loaded: ReadonlyArray<{ _tag: string; file: string; message?: string }> = JSON.parse(out)
    for (const name of ["typo.workflow.mjs", "typo-ts.workflow.ts"]) {
      const typoFile = loaded.find((l) => l.file.endsWith(`/${name}`))
      expect(typoFile?._tag).toBe("LoadError")
      // Line 3, column 31: where `prompt` follows `"agent"` without a comma.
      expect(typoFile?.message).toMatch(
        new RegExp(`^syntax error in ${join(dir, name).replace(/[.]/g, "\\.")}:3:31: `)
      )
    }
  })

  it("reads the location from a Node error report", () => {
    const report = "/w/x.workflow.ts:3\n  a,\n  b c\n    ^\n}\n\nSyntaxError: Expected ','"
    expect(syntaxLocation("/w/x.workflow.ts", report)).toEqual({ line: 3, column: 5 })
    expect(syntaxLocation("/w/x.workflow.ts", "SyntaxError: no location")).toBeNull()
  })

  it("returns nothing when the directory is missing", () => {
    expect(listWorkflowFiles(join(cwd, "nope"))).toEqual([])
  })
})
