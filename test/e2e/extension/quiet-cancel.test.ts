/**
 * Real Pi: the user's `/workflow cancel` is quiet also after a step timeout whose `timed_out`
 * route is still running. The review step's 500 ms limit passes while the model is still
 * answering (its turn is aborted, the `timedOut` intent stored and kept ineligible: the route goes
 * on), the route runs a slow compute node, and the user cancels: no model request follows and the
 * session file holds no `pi-workflows-deferred-turn`. Before the fix, the run's end made the
 * pending `timedOut` intent eligible and its fallback started a model turn.
 */
import { describe, it } from "vitest"
import { peekRows } from "../harness/sqlite-peek.ts"
import type { Scenario } from "./scenario.ts"
import { start } from "./scenario.ts"
import { expectScenario } from "./support.ts"

/** The review's timeout routes to a cleanup that takes a minute unless the run is stopped. */
const SLOW_CLEANUP = `export default {
  name: "review",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review the patch and answer {\\"approved\\": boolean}.", timeoutMs: 500 },
    cleanup: {
      type: "compute",
      run: ({ signal }) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => resolve({ cleaned: true }), 60000)
          signal.addEventListener("abort", () => {
            clearTimeout(timer)
            resolve({ cleaned: false })
          })
        })
    }
  },
  edges: [{ from: "review", switch: { on: "$result.outcome", cases: { ok: "cleanup", timed_out: "cleanup" } } }]
}
`

const cancelAfterTimeout: Scenario = {
  id: "cancel-after-timeout",
  title: "a step times out, its route runs a slow compute node, the user cancels: no model turn",
  interruption: "step timeout, routed; then user /workflow cancel",
  workflows: { "review.workflow.mjs": SLOW_CLEANUP },
  script: [
    start("review"),
    { text: "The review is queued." },
    { text: "Still reading the patch…", delayMs: 3_000 },
    // Anything beyond this would be a turn nobody asked for.
    { text: "A fallback turn." }
  ],
  // The timeout's intent stays pending and is never made eligible (retired by the user's cancel).
  expected: {
    requests: 3,
    steps: 1,
    presentations: 0,
    fallbacks: 0,
    intents: ["timedOut → pending"],
    runs: ["cancelled"]
  },
  play: async (lab, check) => {
    await lab.say("Review the patch.", {
      until: () =>
        lab.mock.outcomes()[2] === "clientClosed" &&
        peekRows(lab.dbPath, "workflow_steps").some((step) => step.node_id === "cleanup"),
      label: "the step timed out and the route reached the slow compute node"
    })
    const before = lab.mock.requestCount()
    await lab.say("/workflow cancel", { until: () => lab.runIn("cancelled"), requireSettle: false })
    // Let any owed turn go out (settles, the coordinator's passes) before counting.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    await lab.settle(lab.pi.mark(), { requireSettle: false })
    check(
      "no model request after /workflow cancel",
      lab.mock.requestCount() === before,
      String(lab.mock.requestCount())
    )
  },
  verify: (observation, _lab, check) => {
    check(
      "no deferred-turn message in the session file",
      observation.messages.every((message) => message.customType !== "pi-workflows-deferred-turn"),
      observation.messages.map((message) => message.customType).join(", ")
    )
    check(
      "the timeout's intent was never made eligible",
      observation.intents.every((intent) => intent.eligibleAt === null),
      JSON.stringify(observation.intents)
    )
  }
}

describe("the user's cancel after a routed step timeout, in real Pi", () => {
  it("no model request and no deferred-turn message follow the cancel", async () => {
    await expectScenario(cancelAfterTimeout)
  }, 60_000)
})
