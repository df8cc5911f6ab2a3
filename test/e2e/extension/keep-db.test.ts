/**
 * `npm run demo -- --keep`: a scenario's controller database outlives its sandbox, and the
 * operator CLI reads it afterwards (the demo prints that command).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { runCli } from "../../cli/cli-support.ts"
import { runScenario, SCENARIOS } from "./scenarios.ts"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe("a kept scenario database", () => {
  it("is left where asked, and the CLI lists the scenario's run from it", async () => {
    const scenario = SCENARIOS.find((s) => s.id === "self-cancel")
    if (scenario === undefined) throw new Error("no self-cancel scenario")
    const dir = mkdtempSync(join(tmpdir(), "pwt-keep-"))
    dirs.push(dir)
    const keepDbAs = join(dir, "self-cancel.db")
    const result = await runScenario(scenario, undefined, { keepDbAs })
    expect(result.failures).toEqual([])
    expect(existsSync(keepDbAs)).toBe(true)
    const runId = result.observation?.runs[0]?.runId ?? ""
    const cli = await runCli(fileURLToPath(new URL("../../../dist/cli.js", import.meta.url)), dir, [
      "runs",
      "--wide",
      "--db",
      keepDbAs
    ])
    expect(cli.code).toBe(0)
    expect(cli.stdout).toContain(runId.slice(0, 20))
    expect(cli.stdout).toContain("cancelled")
  }, 60_000)
})
