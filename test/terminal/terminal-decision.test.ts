import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import type { Lineage } from "../../src/store/launch-store.ts"
import { MAX_INPUT_CHARS, MAX_RESULT_CHARS, terminalDecision } from "../../src/terminal/terminal-decision.ts"
import { terminalFingerprint } from "../../src/terminal/terminal-outcome.ts"
import { completed, ending, run } from "./fixtures.ts"

const decide = (...args: Parameters<typeof terminalDecision>) => {
  const decision = terminalDecision(...args)
  if (decision === null) throw new Error("no decision")
  return decision
}

describe("terminal decision content", () => {
  it("states workflow, revision, run, exact input, state, reason and restart count", () => {
    const d = decide(run(), null)
    expect(d.text).toContain('"build" (revision 2), run 20261201T040000Z-build-0a1b2c3d')
    // A workflow without a revision: none is named (no "(revision none)").
    expect(decide(run({ revision: null }), null).text).toContain(
      '"build", run 20261201T040000Z-build-0a1b2c3d'
    )
    expect(d.text).toContain("- terminal state: failed")
    expect(d.text).toContain("- reason: failed")
    expect(d.text).toContain("- error: compiler crashed")
    expect(d.text).toContain("- restarts: 0 of 3")
    expect(d.text).toContain(JSON.stringify(run().input, null, 2))
    expect(d.text).toContain('{"action": "restart", "runId": "20261201T040000Z-build-0a1b2c3d"}')
    expect(d.text).toContain("does not show that the user's task is done")
    expect(d.restartable).toBe(true)
    expect(d.card).toEqual({
      workflowName: "build",
      observedState: "failed",
      runId: run().runId,
      reasonKind: "failed",
      restartCount: 0,
      restartLimit: 3
    })
  })

  it("covers completed, failed, timed-out, maxSteps, cancelled and blocked results", () => {
    const cases = [
      [completed({ notes: 3 }), "completed", "Default: stop"],
      [completed({ status: "blocked", why: "waiting for review" }), "completed", '"status": "blocked"'],
      [
        run({ state: "timed_out", error: { message: "timed out after 10 ms", nodeId: "n", original: null } }),
        "timedOut",
        "prefer one safe restart"
      ],
      [
        run({
          ...ending("maxSteps"),
          error: {
            message: 'the run reached maxSteps (4) before visiting node "n"',
            nodeId: "n",
            original: null
          }
        }),
        "maxSteps",
        "prefer one safe restart"
      ],
      [
        run({
          state: "cancelled",
          error: { message: "cancelled by the user", nodeId: null, original: null }
        }),
        "userCancelled",
        "the user cancelled this run"
      ],
      [
        run({
          state: "cancelled",
          ...ending("cancelled", "agent"),
          error: { message: "cancelled by the agent", nodeId: "n", original: null }
        }),
        "agentCancelled",
        "Default: stop. The agent cancelled this run; stop here unless the conversation says otherwise"
      ]
    ] as const
    for (const [record, kind, phrase] of cases) {
      const d = decide(record, null)
      expect(d.card.reasonKind).toBe(kind)
      expect(d.text).toContain(phrase)
    }
    expect(decide(cases[4][0], null).restartable).toBe(false)
    expect(decide(cases[5][0], null).restartable).toBe(false)
    expect(terminalDecision(run({ state: "running", error: null }), null)).toBeNull()
  })

  it("bounds a large result but keeps run, state, reason and history", () => {
    const big = completed({ blob: "x".repeat(50_000) })
    const d = decide(big, null)
    expect(d.text.length).toBeLessThan(MAX_RESULT_CHARS + 5_000)
    expect(d.text).toContain("…[truncated]")
    expect(d.text).toContain("- terminal state: completed")
  })

  it("lists earlier outcomes of the chain and says when restart is no longer possible", () => {
    const root = run({ runId: "r0" })
    const lineage: Lineage = {
      rootRunId: "r0",
      parentRunId: "r2",
      restartNumber: 3,
      parentFingerprint: "terminal:x",
      earlier: [
        {
          runId: "r0",
          state: "failed",
          reasonKind: "failed",
          fingerprint: terminalFingerprint(root),
          summary: "boom 0"
        },
        { runId: "r1", state: "failed", reasonKind: "failed", fingerprint: "terminal:1", summary: "boom 1" },
        { runId: "r2", state: "failed", reasonKind: "maxSteps", fingerprint: "terminal:2", summary: "boom 2" }
      ]
    }
    const d = decide(run({ runId: "r3", error: { message: "boom 3", nodeId: "n", original: null } }), lineage)
    expect(d.text).toContain("- restarts: 3 of 3 (chain root r0, restarted from r2)")
    expect(d.text).toContain("- run r1: failed (failed): boom 1")
    expect(d.text).toContain("Restart is not possible: the chain already has 3 of 3 restarts")
    expect(d.card.restartCount).toBe(3)
    expect(d.restartable).toBe(false)
  })
})

describe("terminal decision: what it shows", () => {
  const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

  it("never repeats a credential of the run's error, result or input (the stored run keeps them)", () => {
    const leaky = run({
      error: {
        message: `push failed: GITHUB_TOKEN=${token} Authorization: Bearer ${token}`,
        nodeId: "compile",
        original: null
      },
      input: { remote: `https://deploy:hunter2secret@example.invalid/x.git`, token }
    })
    const d = decide(leaky, null)
    expect(d.text).not.toContain(token)
    expect(d.text).not.toContain("hunter2secret")
    expect(d.text).toContain("- error: push failed: GITHUB_TOKEN=[REDACTED] Authorization: Bearer [REDACTED]")
    expect(leaky.error?.message).toContain(token)
    const done = decide(completed({ log: `npm publish with npm_${"a1".repeat(18)}` }), null)
    expect(done.text).not.toContain("npm_a1")
  })

  it("shows an input of up to 65,536 characters in full, exact", () => {
    const input = { text: "y".repeat(20_000), emoji: "😀".repeat(MAX_INPUT_CHARS - 20_050) }
    const d = decide(run({ input }), null)
    expect(d.text).toContain(JSON.stringify(input, null, 2))
    expect(d.text).not.toContain("…[truncated]")
  })

  it("names a longer input by its size and SHA-256 digest instead of cutting it", () => {
    const input = { text: "z".repeat(MAX_INPUT_CHARS) }
    const compact = JSON.stringify(input)
    const digest = createHash("sha256").update(compact, "utf8").digest("hex")
    const d = decide(run({ input }), null)
    expect(d.text).toContain(`input of ${compact.length} characters, sha256 ${digest}; not shown`)
    expect(d.text).not.toContain("z".repeat(100))
    expect(d.text.length).toBeLessThan(10_000)
  })

  it("clips the error in characters, never halving a surrogate pair", () => {
    const d = decide(
      run({ error: { message: "😀".repeat(MAX_RESULT_CHARS * 2), nodeId: null, original: null } }),
      null
    )
    const line = d.text.split("\n").find((l) => l.startsWith("- error: ")) ?? ""
    expect([...line.slice("- error: ".length)]).toHaveLength(MAX_RESULT_CHARS)
    expect(line).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
  })
})
