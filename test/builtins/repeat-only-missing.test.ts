/**
 * Real Pi, the built-in autoimplement, a temporary git repository with a local bare remote and
 * a fake `gh` on PATH; the model is scripted to follow the prompts' inspect-before-act
 * instructions. `publish` pushes and opens the pull request, then times out (the default limit
 * is shortened for this Pi through PI_WORKFLOWS_DEFAULT_TIMEOUT_MS); the fallback inspects and
 * routes to retry, and the publish guard (a read-only compute node) finds both done and skips
 * the stage. `finalizeDelivery` merges and posts the final report, then Pi stops and restarts
 * mid-stage; the resumed stage is asked again (a resume re-asks the same step, past no guard)
 * and finds both done. A model that does not inspect is test/builtins/repeat-guards.test.ts.
 * Judged by the forge's state: one commit, one push of the branch, one pull request, one
 * review, one merge, one final report.
 */
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { extensionEntry, messageText } from "../e2e/extension/lab.ts"
import { type MockOpenAI, startMockOpenAI } from "../e2e/harness/mock-openai.ts"
import { type PiRpc, startPi } from "../e2e/harness/pi-rpc.ts"
import { createPiSandbox, type PiSandbox } from "../e2e/harness/pi-sandbox.ts"
import { peekRows } from "../e2e/harness/sqlite-peek.ts"
import { createForge } from "./fake-forge.ts"
import { makeForgeModel } from "./forge-model.ts"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const until = async (check: () => boolean, what: string, timeoutMs = 30_000) => {
  const deadline = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe("autoimplement repeats only missing work (real Pi, fake forge)", () => {
  it("a timed-out publish and an interrupted delivery, repeated: no duplicate push, PR, review, merge or report", async () => {
    const mock: MockOpenAI = await startMockOpenAI()
    cleanups.push(() => mock.close())
    const sandbox: PiSandbox = createPiSandbox(mock.baseUrl, "pwt-forge-")
    cleanups.push(() => sandbox.remove())
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
              input: {
                task: "add a verbose flag",
                plan: "write feature.txt and ship it",
                repo: sandbox.workDir
              }
            }
          }
        ]
      },
      stall: { publish: [1], finalizeDelivery: [1] }
    })
    mock.enqueue(...Array.from({ length: 300 }, () => model.step))
    const env = { ...forge.env, PI_WORKFLOWS_DB: db, PI_WORKFLOWS_DEFAULT_TIMEOUT_MS: "20000" }
    let pi: PiRpc = await startPi({ sandbox, extensionPath: extensionEntry(), env, timeoutMs: 60_000 })
    cleanups.push(() => pi.dispose())

    await pi.prompt("Implement the task with autoimplement.")
    // publish pushes and opens the PR, stalls, times out; the fallback retries it; the run goes on
    // until delivery merged and reported, where the model stalls again.
    const diagnose = () =>
      JSON.stringify({
        visits: [...model.visits],
        gh: forge.ghLog(),
        steps: peekRows(db, "workflow_steps", { orderBy: "seq" }).map((r) => [r.node_id, r.outcome, r.error]),
        runs: peekRows(db, "workflow_runs").map((r) => [r.state, r.error_json]),
        requests: mock.requestCount(),
        last: mock
          .requests()
          .slice(-3)
          .map((r) => [r.messages.at(-1)?.role, messageText(r.messages.at(-1)).slice(0, 400)]),
        outcomes: mock.outcomes().slice(-3),
        stderr: pi.stderr().slice(-1500)
      })
    await until(() => model.stalls() === 2, "delivery to merge, report and stall", 300_000).catch((error) => {
      throw new Error(`${String(error)}\n${diagnose()}`)
    })
    await pi.waitForQuiet({ after: 0, timeoutMs: 30_000 })
    expect(forge.ghLog()).toEqual(["create", "review", "merge", "comment"])
    // The retry went through the publish guard, which found the work done: publish was asked once.
    expect(model.visits.get("publish")).toBe(1)
    expect(model.visits.get("fallback")).toBe(1)
    await pi.stop(30_000)
    pi = await pi.restart()
    try {
      await until(
        () => peekRows(db, "workflow_runs").some((row) => row.state === "completed"),
        "the run to complete after the restart",
        180_000
      )
    } catch (error) {
      throw new Error(`${String(error)}\n${diagnose()}\nstderr: ${pi.stderr().slice(-3000)}`)
    }
    await pi.waitForQuiet({ after: 0, timeoutMs: 30_000 })

    expect(model.visits.get("finalizeDelivery")).toBe(2)
    // Every visit of each consequential stage carried the inspect-before-act instructions.
    const publishRule = "open a pull request only when none exists for the branch"
    const deliverRule = "Merge only when the pull request is not merged yet"
    expect(
      new Set(mock.requestsMentioning(publishRule).map((i) => mock.findUserContents(publishRule, i).length))
    ).not.toContain(0)
    expect(
      mock.requests().filter((r) => mock.findUserContents(deliverRule, r.index).length === 2).length
    ).toBeGreaterThan(0)
    expect(forge.commitsOnWork()).toBe(1)
    expect(forge.pushes().filter((line) => line.endsWith("refs/heads/work"))).toHaveLength(1)
    expect(forge.ghLog()).toEqual(["create", "review", "merge", "comment"])
    const [pr] = forge.state().prs
    expect(pr?.state).toBe("MERGED")
    expect(pr?.comments).toHaveLength(1)
    const steps = peekRows(db, "workflow_steps", { orderBy: "seq" }).map(
      (row) => `${String(row.node_id)}:${String(row.outcome)}`
    )
    expect(steps.filter((step) => step.startsWith("publish"))).toEqual([
      "publishGuard:ok",
      "publish:timed_out",
      "publishGuard:ok"
    ])
    expect(steps).toContain("fallback:ok")
  }, 480_000)
})
