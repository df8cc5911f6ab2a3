/**
 * The test-only crash hook: without the variable (or without the service) nothing happens; with
 * it, the process kills itself with SIGKILL at exactly the named point and not before.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import {
  CrashPoints,
  crashPointsFromEnv as fromEnv,
  noopCrashPoints as noop,
  reachCrashPoint as reach
} from "../../src/delivery/coordinator.ts"
import { CRASH_AT_ENV } from "../../src/delivery/unanswered-successor.ts"
import { NODE_TS_ARGS } from "../support/node-child.ts"

const PROBE = fileURLToPath(new URL("./crash-probe.ts", import.meta.url))

const runChild = (crashAt: string | undefined) =>
  new Promise<{ stdout: string; signal: NodeJS.Signals | null }>((done, fail) => {
    const env: Record<string, string | undefined> = { ...process.env, NODE_OPTIONS: "" }
    delete env[CRASH_AT_ENV]
    if (crashAt !== undefined) env[CRASH_AT_ENV] = crashAt
    const child = spawn(process.execPath, [...NODE_TS_ARGS, PROBE], { cwd: process.cwd(), env })
    let stdout = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
    })
    child.on("error", fail)
    child.on("close", (_code, signal) => done({ stdout, signal }))
  })

describe("crash points", () => {
  it("are a no-op without the service or without the variable", async () => {
    await Effect.runPromise(reach("afterSend", "i"))
    await Effect.runPromise(reach("afterSend", "i").pipe(Effect.provideService(CrashPoints, fromEnv({}))))
    expect(fromEnv({ [CRASH_AT_ENV]: "beforeLunch" })).toBe(noop)
    expect(fromEnv({})).toBe(noop)
  })

  it.each([
    [undefined, "afterClaim\nafterSend\nafterResolve\n", null],
    ["afterClaim", "", "SIGKILL"],
    ["afterSend", "afterClaim\n", "SIGKILL"],
    ["afterResolve", "afterClaim\nafterSend\n", "SIGKILL"]
  ] as const)("%s: the process dies exactly there", async (crashAt, stdout, signal) => {
    const result = await runChild(crashAt)
    expect(result).toEqual({ stdout, signal })
  })
})
