/**
 * The extension as a Pi user gets it: the packed tarball, `pi install`ed into an isolated agent
 * directory, discovered by Pi at start-up (no `-e`, nothing of this checkout on Pi's command
 * line). The agent cancels its own workflow; the model gets exactly one fallback turn.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { selfCancel } from "../extension/scenarios.ts"
import { expectScenario } from "../extension/support.ts"
import { type PackedPackage, packPackage, piInstall, piInstalledPackageDir } from "./package.ts"

let packed: PackedPackage | undefined
beforeAll(async () => {
  packed = await packPackage()
}, 120_000)
afterAll(() => packed?.remove())

describe("installed package in real Pi", () => {
  it("agent self-cancel → exactly one fallback, with the extension from `pi install <tarball>`", async () => {
    const tarball = packed?.tarball ?? ""
    const result = await expectScenario(selfCancel, {
      installed: true,
      install: async (sandbox) => {
        const installed = await piInstall(tarball, sandbox.agentDir, sandbox.homeDir)
        expect(installed).toBe(piInstalledPackageDir(sandbox.agentDir))
        expect(existsSync(join(installed, "dist", "extension.js"))).toBe(true)
        // Pi recorded the package as the user's; it loads from the agent dir, not this checkout.
        const settings = readFileSync(join(sandbox.agentDir, "settings.json"), "utf8")
        expect(settings).toContain(`file:${tarball}`)
      }
    })
    expect(result.summary?.fallbacks).toBe(1)
    expect(result.summary?.intents).toEqual(["agentCancelled → fallback"])
  }, 180_000)
})
