import { describe, expect, it } from "vitest"
import { Either } from "effect"
import { decodeLaunch, encodeLaunch, LAUNCH_SCHEMA, type Lineage } from "../../src/store/launch-store.ts"
import { decideRestart, type RestartCandidate } from "../../src/terminal/restart-policy.ts"
import { reasonKind, terminalFingerprint } from "../../src/terminal/terminal-outcome.ts"
import { completed, ending, run } from "./fixtures.ts"

const loaded = { revision: 2, fingerprint: "sha256:abc" }
const candidate = (overrides: Partial<RestartCandidate> = {}): RestartCandidate => ({
  run: run(),
  lineage: null,
  sessionId: "s1",
  loaded,
  restartedAs: null,
  ...overrides
})
const refusal = (c: RestartCandidate) => {
  const decided = decideRestart(c)
  if (Either.isRight(decided)) throw new Error("expected a refusal")
  return decided.left
}
const lineageOf = (c: RestartCandidate): Lineage => {
  const decided = decideRestart(c)
  if (Either.isLeft(decided)) throw new Error(decided.left.message)
  return decided.right
}

/** Run a chain: each entry is how the next run ends; returns the refusal index, if any. */
const chain = (endings: ReadonlyArray<Partial<Parameters<typeof run>[0]>>) => {
  let lineage: Lineage | null = null
  for (const [index, ending] of endings.entries()) {
    const current = run({ runId: `20261201T04000${index}Z-build-0000000${index}`, ...ending })
    const decided = decideRestart(candidate({ run: current, lineage }))
    if (Either.isLeft(decided)) return { stoppedAt: index, reason: decided.left.reason, runs: index + 1 }
    lineage = decided.right
  }
  return { stoppedAt: null, reason: null, runs: endings.length + 1 }
}

describe("terminal fingerprint", () => {
  it("ignores run IDs, attempt IDs and timestamps but not the input, result or error", () => {
    const a = run({
      error: { message: "step att-11111111-2222-3333-4444-555555555555 failed", nodeId: "n", original: null }
    })
    const b = run({
      runId: "20261201T050000Z-build-99999999",
      createdAt: "2027-01-01T00:00:00.000Z",
      endedAt: "2027-01-01T00:00:00.000Z",
      error: { message: "step att-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee failed", nodeId: "n", original: null }
    })
    expect(terminalFingerprint(a)).toBe(terminalFingerprint(b))
    expect(terminalFingerprint(run({ input: { target: "lib" } }))).not.toBe(terminalFingerprint(run()))
    expect(
      terminalFingerprint(run({ error: { message: "other", nodeId: "compile", original: null } }))
    ).not.toBe(terminalFingerprint(run()))
    expect(terminalFingerprint(completed({ ok: 1 }))).not.toBe(terminalFingerprint(completed({ ok: 2 })))
    expect(terminalFingerprint(run({ revision: 3 }))).not.toBe(terminalFingerprint(run()))
  })

  it("is stable under key order and mentions of the run's own ID", () => {
    const id = "20261201T040000Z-build-0a1b2c3d"
    const x = completed({ a: 1, b: { c: 2, d: 3 } }, { input: { y: 1, x: 2 } })
    const y = completed({ b: { d: 3, c: 2 }, a: 1 }, { input: { x: 2, y: 1 } })
    expect(terminalFingerprint(x)).toBe(terminalFingerprint(y))
    const own = run({ runId: id, error: { message: `run ${id} failed`, nodeId: null, original: null } })
    const other = run({
      runId: "20261201T050000Z-build-11111111",
      error: { message: "run 20261201T050000Z-build-11111111 failed", nodeId: null, original: null }
    })
    expect(terminalFingerprint(own)).toBe(terminalFingerprint(other))
  })

  it("classifies every terminal reason", () => {
    expect(reasonKind(completed({}))).toBe("completed")
    expect(reasonKind(run({ state: "timed_out" }))).toBe("timedOut")
    expect(
      reasonKind(
        run({ state: "cancelled", error: { message: "cancelled by the user", nodeId: null, original: null } })
      )
    ).toBe("userCancelled")
    expect(
      reasonKind(
        run({
          state: "cancelled",
          ...ending("cancelled", "agent"),
          error: { message: "cancelled by the agent", nodeId: "n", original: null }
        })
      )
    ).toBe("agentCancelled")
    expect(
      reasonKind(
        run({
          ...ending("maxSteps"),
          error: {
            message: 'the run reached maxSteps (5) before visiting node "x"',
            nodeId: "x",
            original: null
          }
        })
      )
    ).toBe("maxSteps")
    expect(
      reasonKind(
        run({
          ...ending("controllerInterrupted", "controller"),
          error: { message: "interrupted by the controller: ops", nodeId: "x", original: null }
        })
      )
    ).toBe("controllerInterrupted")
    expect(
      reasonKind(
        run({
          stepCount: 0,
          ...ending("launchFailed"),
          error: { message: 'workflow "build" is no longer loaded', nodeId: null, original: null }
        })
      )
    ).toBe("launchFailed")
    expect(reasonKind(run())).toBe("failed")
    expect(reasonKind(run({ state: "running", error: null }))).toBeNull()
  })
})

describe("restart policy", () => {
  it("first technical retry: a failed root run restarts as restart 1 of its own chain", () => {
    const lineage = lineageOf(candidate())
    expect(lineage).toMatchObject({ rootRunId: run().runId, parentRunId: run().runId, restartNumber: 1 })
    expect(lineage.parentFingerprint).toBe(terminalFingerprint(run()))
    expect(lineage.earlier.map((e) => e.reasonKind)).toEqual(["failed"])
  })

  it("refuses active, foreign, user-cancelled, already restarted and changed-source runs", () => {
    for (const state of ["queued", "running", "waiting"] as const) {
      expect(refusal(candidate({ run: run({ state, error: null }) })).reason).toBe("active")
    }
    expect(refusal(candidate({ sessionId: "s2" })).reason).toBe("otherSession")
    const userCancelled = run({
      state: "cancelled",
      error: { message: "cancelled by the user", nodeId: null, original: null }
    })
    expect(refusal(candidate({ run: userCancelled })).reason).toBe("userCancelled")
    expect(refusal(candidate({ restartedAs: "r2" })).reason).toBe("alreadyRestarted")
    expect(refusal(candidate({ loaded: null })).reason).toBe("sourceGone")
    expect(refusal(candidate({ loaded: { revision: 3, fingerprint: "sha256:abc" } })).reason).toBe(
      "sourceGone"
    )
    expect(refusal(candidate({ loaded: { revision: 2, fingerprint: "sha256:new" } })).reason).toBe(
      "sourceGone"
    )
  })

  it("refuses every explicitly cancelled run, the agent's too, decided from the stored fields", () => {
    const error = { message: "cancelled", nodeId: "n", original: null }
    for (const by of ["agent", "user"] as const) {
      // Who cancelled is the row's end facts (`end_by`), whatever the error text says.
      const refused = refusal(
        candidate({
          run: run({ state: "cancelled", ...ending("cancelled", by), cancelRequested: by, error })
        })
      )
      expect(refused.reason).toBe(by === "agent" ? "agentCancelled" : "userCancelled")
      expect(refused.message).toContain(`the ${by} cancelled this run`)
      expect(refused.message).toContain('a fresh `start` of workflow "build" is still possible')
    }
    // The end facts decide, not the message: an agent's cancel whose text says "user" is the agent's.
    const worded = run({
      state: "cancelled",
      ...ending("cancelled", "agent"),
      error: { message: "cancelled by the user", nodeId: "n", original: null }
    })
    expect(refusal(candidate({ run: worded })).reason).toBe("agentCancelled")
    expect(reasonKind(run({ state: "cancelled", ...ending("cancelled", "agent"), error }))).toBe(
      "agentCancelled"
    )
  })

  it("a completed run (for example a blocked result) may be restarted", () => {
    expect(Either.isRight(decideRestart(candidate({ run: completed({ status: "blocked" }) })))).toBe(true)
  })

  it("the same ending twice stops the chain at once (repeated identical maxSteps failure)", () => {
    const maxSteps = {
      ...ending("maxSteps"),
      error: {
        message: 'the run reached maxSteps (10) before visiting node "x"',
        nodeId: "x",
        original: null
      }
    }
    expect(chain([maxSteps, maxSteps, maxSteps])).toEqual({ stoppedAt: 1, reason: "repeated", runs: 2 })
  })

  it("progress followed by a different failure stays eligible until three restarts (four runs)", () => {
    const fail = (n: number) => ({
      error: { message: `failed at item ${n}`, nodeId: "work", original: null }
    })
    expect(chain([fail(1), fail(2), fail(3), fail(4), fail(5)])).toEqual({
      stoppedAt: 3,
      reason: "limit",
      runs: 4
    })
    // A repeat of an ending from further back in the chain also stops it.
    expect(chain([fail(1), fail(2), fail(1)])).toEqual({ stoppedAt: 2, reason: "repeated", runs: 3 })
  })

  it("lineage survives encoding and decoding; bad stored launch data is an error", () => {
    const lineage = lineageOf(candidate())
    const text = encodeLaunch({ schema: LAUNCH_SCHEMA, kind: "restart", lineage })
    expect(decodeLaunch(text)).toEqual(Either.right({ schema: LAUNCH_SCHEMA, kind: "restart", lineage }))
    expect(Either.isLeft(decodeLaunch("{"))).toBe(true)
    expect(
      Either.isLeft(
        decodeLaunch(JSON.stringify({ schema: LAUNCH_SCHEMA, kind: "restart", lineage, extra: 1 }))
      )
    ).toBe(true)
    const tooMany = { ...lineage, restartNumber: 4 }
    expect(
      Either.isLeft(
        decodeLaunch(JSON.stringify({ schema: LAUNCH_SCHEMA, kind: "restart", lineage: tooMany }))
      )
    ).toBe(true)
  })
})
