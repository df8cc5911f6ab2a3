import { existsSync, rmSync } from "node:fs"
import { dirname } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { runCli } from "../cli/cli-support.ts"
import { runNode } from "../support/node-child.ts"

describe("examples/store.ts", () => {
  it("runs to completion under Node with type stripping and prints its summary", async () => {
    const script = fileURLToPath(new URL("../../examples/store.ts", import.meta.url))
    const result = await runNode(script, [], process.cwd())
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("2. ensure again returns the same intent: true")
    expect(result.stdout).toContain("4. a competing natural claim got: nothing")
    expect(result.stdout).toMatch(/resolved {4}\S+ by fallback \(turn-message:[0-9a-f]{64}\)/)
    expect(result.stdout).toContain("is not held (resolved)")
    expect(result.stdout).toContain("7. list: 1 intent(s) for session-demo, 0 pending")
  })
})

describe("examples/store.ts --keep", () => {
  it("keeps its database and prints a CLI command that reads it", async () => {
    const script = fileURLToPath(new URL("../../examples/store.ts", import.meta.url))
    const result = await runNode(script, ["--keep"], process.cwd())
    expect(result.code).toBe(0)
    const command = /kept; read it with the CLI: node dist\/cli\.js intents --db (\S+)$/m.exec(result.stdout)
    expect(command).not.toBeNull()
    const db = command?.[1] ?? ""
    try {
      expect(existsSync(db)).toBe(true)
      const cli = await runCli(fileURLToPath(new URL("../../dist/cli.js", import.meta.url)), dirname(db), [
        "intents",
        "--wide",
        "--db",
        db
      ])
      expect(cli.code).toBe(0)
      expect(cli.stdout).toContain("resolved (fallback)")
      expect(cli.stdout).toContain("session-demo")
    } finally {
      rmSync(dirname(db), { recursive: true, force: true })
    }
  })
})
