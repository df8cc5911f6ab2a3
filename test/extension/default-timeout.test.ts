import { describe, expect, it } from "vitest"
import { defaultTimeoutFromEnv } from "../../src/extension/session-app.ts"

describe("PI_WORKFLOWS_DEFAULT_TIMEOUT_MS", () => {
  it("is unset by default and a positive whole number when set", () => {
    expect(defaultTimeoutFromEnv({})).toBeUndefined()
    expect(defaultTimeoutFromEnv({ PI_WORKFLOWS_DEFAULT_TIMEOUT_MS: "" })).toBeUndefined()
    expect(defaultTimeoutFromEnv({ PI_WORKFLOWS_DEFAULT_TIMEOUT_MS: "6000" })).toBe(6000)
  })

  it.each(["0", "-5", "1.5", "abc", "1e3", "99999999999999999999"])(
    "refuses %s with a clear message",
    (raw) => {
      expect(() => defaultTimeoutFromEnv({ PI_WORKFLOWS_DEFAULT_TIMEOUT_MS: raw })).toThrow(
        `PI_WORKFLOWS_DEFAULT_TIMEOUT_MS must be a positive whole number of milliseconds, got "${raw}"`
      )
    }
  )
})
