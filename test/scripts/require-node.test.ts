/**
 * Every entry point checks the Node version before it loads anything: the operator CLI's real
 * bin, the npm scripts' guard (scripts/require-node.mjs) and the extension entry, under a
 * stand-in old Node (a preload that makes `process.versions.node` report 20.x), and the rule
 * itself (src/node-version.ts), which the script must apply identically.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { isSupportedNode, nodeVersionProblem } from "../../src/node-version.ts"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A preload that makes this Node report `version` (what an old Node would). */
const standIn = (version: string): ReadonlyArray<string> => [
  "--import",
  `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${version}"})`
]

const node = (args: ReadonlyArray<string>): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [...args], { cwd: ROOT }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr })
    )
  })

const VERSIONS = ["18.20.0", "20.20.2", "22.0.0", "22.18.9", "22.19.0", "22.23.5", "23.1.0", "24.0.0", "x"]

describe("the Node version check", () => {
  it("accepts 22.19 and later, nothing older", () => {
    expect(VERSIONS.filter(isSupportedNode)).toEqual(["22.19.0", "22.23.5", "23.1.0", "24.0.0"])
    expect(nodeVersionProblem("22.19.0", "x")).toBeNull()
    expect(nodeVersionProblem("20.20.2", "the demo")).toBe(
      'the demo needs Node.js >= 22.19 (this is 20.20.2): select Node 22 first, e.g. eval "$(bash scripts/node22-env.sh)" in the pi-workflow-turns clone, then run it again.'
    )
  })

  it("scripts/require-node.mjs applies the same rule, in one line on stderr, exit 2", async () => {
    for (const version of VERSIONS.filter((v) => v !== "x")) {
      const result = await node([...standIn(version), "scripts/require-node.mjs", "npm run demo"])
      if (isSupportedNode(version)) expect(result).toEqual({ code: 0, stdout: "", stderr: "" })
      else {
        expect(result.code).toBe(2)
        expect(result.stderr.trim().split("\n")).toEqual([
          `npm run demo needs Node.js >= 22.19 (this is ${version}): select Node 22 first, e.g. eval "$(bash scripts/node22-env.sh)", then run it again.`
        ])
      }
    }
  })

  it("the CLI's real bin says what to run and never loads the database under an old Node", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pwt-oldnode-"))
    dirs.push(dir)
    const db = join(dir, "controller.db")
    writeFileSync(db, "")
    const before = statSync(db).mtimeMs
    const result = await node([...standIn("20.20.2"), join(ROOT, "dist", "cli.js"), "--db", db, "doctor"])
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(result.stderr.trim().split("\n")).toEqual([
      `pi-workflow-turns: ${nodeVersionProblem("20.20.2", "the operator CLI")}`
    ])
    expect(statSync(db).mtimeMs).toBe(before)
  })

  it("the extension entry registers nothing under an old Node and tells the user once at session start", async () => {
    const probe = [
      `const { default: ext } = await import(${JSON.stringify(join(ROOT, "dist", "extension.js"))});`,
      "const seen = { tools: 0, commands: 0, handlers: [] };",
      "const pi = { registerTool: () => seen.tools++, registerCommand: () => seen.commands++,",
      "  registerMessageRenderer: () => {}, on: (name, handler) => seen.handlers.push([name, handler]) };",
      "ext(pi);",
      "const notices = [];",
      "for (const [name, handler] of seen.handlers) if (name === 'session_start')",
      "  await handler({}, { hasUI: true, ui: { notify: (text, level) => notices.push([level, text]) } });",
      "console.log(JSON.stringify({ tools: seen.tools, commands: seen.commands,",
      "  events: seen.handlers.map(([name]) => name), notices }));"
    ].join("\n")
    const result = await node([...standIn("20.20.2"), "--input-type=module", "-e", probe])
    expect(result.stderr).toBe("")
    expect(JSON.parse(result.stdout)).toEqual({
      tools: 0,
      commands: 0,
      events: ["session_start"],
      notices: [["error", nodeVersionProblem("20.20.2", "pi-workflow-turns")]]
    })
  })
})
