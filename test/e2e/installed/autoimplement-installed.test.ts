/**
 * The built-in autoimplement from the installed package: the checkout is packed, the tarball
 * `pi install`ed into an isolated agent dir (the shared harness in ./package.ts), and real Pi
 * discovers the extension there. The
 * `publish` stage times out (PI_WORKFLOWS_DEFAULT_TIMEOUT_MS shortens the default limit it
 * uses), the fallback routes to retry, and the run completes. Local bare remote, fake `gh`,
 * scripted model.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createForge } from "../../builtins/fake-forge.ts"
import { makeForgeModel } from "../../builtins/forge-model.ts"
import { startMockOpenAI } from "../harness/mock-openai.ts"
import { startPi } from "../harness/pi-rpc.ts"
import { createPiSandbox } from "../harness/pi-sandbox.ts"
import { peekRows } from "../harness/sqlite-peek.ts"
import { type PackedPackage, packPackage, piInstall, piInstalledPackageDir } from "./package.ts"

let packed: PackedPackage | undefined
beforeAll(async () => {
  packed = await packPackage()
}, 120_000)
afterAll(() => packed?.remove())

const until = async (check: () => boolean, what: string, timeoutMs: number) => {
  const deadline = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe("autoimplement from the installed package (real Pi)", () => {
  it("a stage times out, the fallback routes to retry, the guard skips the done work, the run completes", async () => {
    const mock = await startMockOpenAI()
    const sandbox = createPiSandbox(mock.baseUrl, "pwt-ai-installed-")
    try {
      const tarball = packed?.tarball ?? ""
      expect(await piInstall(tarball, sandbox.agentDir, sandbox.homeDir)).toBe(
        piInstalledPackageDir(sandbox.agentDir)
      )
      // Pi loads the package recorded in the agent settings; nothing of this checkout is on its command line.
      expect(readFileSync(join(sandbox.agentDir, "settings.json"), "utf8")).toContain(`file:${tarball}`)
      const forge = createForge(sandbox.root, sandbox.workDir)
      const db = join(sandbox.root, "controller.db")
      const model = makeForgeModel({
        start: {
          toolCalls: [
            {
              name: "workflow",
              arguments: {
                action: "start",
                workflow: "autoimplement",
                input: { task: "ship feature.txt", plan: "add it" }
              }
            }
          ]
        },
        stall: { publish: [1] }
      })
      mock.enqueue(...Array.from({ length: 200 }, () => model.step))
      const pi = await startPi({
        sandbox,
        extensionPath: null,
        discoverExtensions: true,
        env: { ...forge.env, PI_WORKFLOWS_DB: db, PI_WORKFLOWS_DEFAULT_TIMEOUT_MS: "20000" },
        timeoutMs: 60_000
      })
      try {
        await pi.prompt("Implement it with autoimplement.")
        await until(
          () =>
            peekRows(db, "workflow_runs").some((row) => row.state !== "running" && row.state !== "queued"),
          "the run to end",
          300_000
        )
        const [run] = peekRows(db, "workflow_runs")
        expect(run?.state).toBe("completed")
        const steps = peekRows(db, "workflow_steps", { orderBy: "seq" }).map(
          (row) => `${String(row.node_id)}:${String(row.outcome)}`
        )
        // The retry passes the publish guard, which finds the branch pushed and its pull request open.
        expect(steps.filter((step) => /^(publish|publishGuard|fallback):/.test(step))).toEqual([
          "publishGuard:ok",
          "publish:timed_out",
          "fallback:ok",
          "publishGuard:ok"
        ])
        expect(forge.ghLog()).toEqual(["create", "review", "merge", "comment"])
      } finally {
        await pi.dispose()
      }
    } finally {
      sandbox.remove()
      await mock.close()
    }
  }, 480_000)
})
