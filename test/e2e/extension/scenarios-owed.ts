/**
 * Scenarios where an interruption owes the model exactly one successor turn: a fallback, or the
 * workflow's own recovery prompt.
 */
import { Effect } from "effect"
import { FACTS_SCHEMA, type FallbackFacts } from "../../../src/domain/facts.ts"
import { sourceEventId } from "../../../src/domain/identity.ts"
import { TurnIntentStore } from "../../../src/store/turn-intent-store.ts"
import { layerSqlite } from "../../../src/store/turn-intent-store-sql.ts"
import { lastMessageOf, oneIntentResolvedBy, type Scenario, start, submit } from "./scenario.ts"
import { DEPLOY, LINT, NIGHTLY_REPORT, REVIEW, TRIAGE } from "./workflow-sources.ts"

export const selfCancel: Scenario = {
  id: "self-cancel",
  title: "the agent cancels its own workflow during an active step turn",
  interruption: "agent cancel (tool)",
  workflows: { "triage.workflow.mjs": TRIAGE },
  script: [
    start("triage"),
    { text: "The triage run is queued; its step will arrive as a message." },
    { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] },
    { text: "The triage run is cancelled; nothing else to do." }
  ],
  expected: {
    requests: 4,
    steps: 1,
    presentations: 0,
    fallbacks: 1,
    intents: ["agentCancelled → fallback"],
    runs: ["cancelled"]
  },
  play: async (lab) => {
    await lab.say("Label issue #42 with the triage workflow.", {
      until: () => lab.intentsResolved(1),
      label: "the intent is resolved"
    })
  },
  verify: (observation, lab, check) => {
    check("the 3rd request answered the step", lastMessageOf(lab, 2).includes('waiting for step "label"'))
    check("the 4th request is the fallback", lastMessageOf(lab, 3).startsWith("Workflow turn notice"))
    oneIntentResolvedBy(observation, check, "fallback")
  }
}

export const crashAfterStart: Scenario = {
  id: "crash-after-start",
  title: "the run fails after a successful start, before its first prompt",
  interruption: "async failure",
  workflows: { "nightly-report.workflow.mjs": NIGHTLY_REPORT },
  script: [
    start("nightly-report"),
    { text: "The nightly report is queued." },
    { text: "The nightly report failed: the metrics database was unreachable." }
  ],
  expected: {
    requests: 3,
    steps: 0,
    presentations: 0,
    fallbacks: 1,
    intents: ["failed → fallback"],
    runs: ["failed"]
  },
  play: async (lab) => {
    await lab.say("Run the nightly report.", {
      until: () => lab.intentsResolved(1),
      label: "the intent is resolved"
    })
  },
  verify: (observation, lab, check) => {
    const started = observation.toolResults[0]
    check(
      "the start tool result said queued",
      started?.isError === false && started.text.includes("is queued as run"),
      started?.text
    )
    check(
      "the fallback carries the real failure reason",
      lastMessageOf(lab, 2).includes("metrics database unreachable (ECONNREFUSED 127.0.0.1:5432)")
    )
  }
}

export const launchFailure: Scenario = {
  id: "launch-failure",
  title: "a queued launch fails at activation",
  interruption: "launch failure",
  workflows: { "deploy.workflow.mjs": DEPLOY },
  script: [
    start("deploy"),
    { text: "The deploy is queued." },
    { text: "The deploy could not start: main is locked." }
  ],
  expected: {
    requests: 3,
    steps: 0,
    presentations: 0,
    fallbacks: 1,
    intents: ["launchFailed → fallback"],
    runs: ["failed"]
  },
  play: async (lab) => {
    await lab.say("Deploy main.", { until: () => lab.intentsResolved(1), label: "the intent is resolved" })
  },
  verify: (observation, lab, check) => {
    check(
      "the start tool result said queued",
      observation.toolResults[0]?.text.includes("is queued as run") === true
    )
    check("the intent is keyed to $launch", observation.intents[0]?.nodeId === "$launch")
    check(
      "the fallback names the activation problem",
      lastMessageOf(lab, 2).includes("locked for a release freeze")
    )
  }
}

export const timeoutRecovery: Scenario = {
  id: "timeout-recovery",
  title: "a step times out and its timed_out route sends a recovery prompt",
  interruption: "step timeout, routed",
  workflows: { "review.workflow.mjs": REVIEW },
  script: [
    start("review"),
    { text: "The review is queued." },
    { text: "Still reading the patch…", delayMs: 3_000 },
    submit({ approved: true }),
    { text: "Submitted the decision." },
    { text: "The review is approved." }
  ],
  expected: {
    requests: 6,
    steps: 2,
    presentations: 1,
    fallbacks: 0,
    intents: ["timedOut → workflowPrompt", "completed → presentation"],
    runs: ["completed"]
  },
  play: async (lab) => {
    await lab.say("Review the patch.", { until: () => lab.runIn("completed"), label: "the run completed" })
  },
  verify: (observation, lab, check) => {
    check(
      "the slow step turn was aborted",
      lab.mock.outcomes()[2] === "clientClosed",
      String(lab.mock.outcomes()[2])
    )
    check(
      "the 4th request is the recovery prompt",
      lastMessageOf(lab, 3).startsWith("The review step timed out")
    )
    oneIntentResolvedBy(observation, check, "recovery prompt")
  }
}

export const terminalTimeout: Scenario = {
  id: "terminal-timeout",
  title: "a step times out with no route: the run ends timed_out",
  interruption: "step timeout, no route",
  workflows: { "lint.workflow.mjs": LINT },
  script: [
    start("lint"),
    { text: "The lint run is queued." },
    { text: "Fixing…", delayMs: 3_000 },
    { text: "The lint step timed out; I will check the run's status first." }
  ],
  expected: {
    requests: 4,
    steps: 1,
    presentations: 0,
    fallbacks: 1,
    intents: ["timedOut → fallback"],
    runs: ["timed_out"]
  },
  play: async (lab) => {
    await lab.say("Fix the lint errors.", {
      until: () => lab.intentsResolved(1),
      label: "the intent is resolved"
    })
  },
  verify: (observation, lab, check) => {
    check("the slow step turn was aborted", lab.mock.outcomes()[2] === "clientClosed")
    check("the fallback says the run timed out", lastMessageOf(lab, 3).includes("recorded as timed_out"))
    oneIntentResolvedBy(observation, check, "fallback")
  }
}

const pendingFacts = (runId: string): FallbackFacts => ({
  schema: FACTS_SCHEMA,
  workflowName: "nightly-report",
  runId,
  observedState: "failed",
  cause: "failed",
  nodeId: "collect",
  attemptId: "att-restart-1",
  reason: 'node "collect" failed: the runner\'s host went away',
  handoff: false
})

/** Write one eligible intent for `sessionId` into the controller database, as the library does. */
const writeEligibleIntent = (dbPath: string, sessionId: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const runId = "20260101T000000Z-nightly-report-0badf00d"
      const store = yield* TurnIntentStore
      const source = yield* sourceEventId({
        runId,
        cause: "failed",
        nodeId: "collect",
        attemptId: "att-restart-1",
        interruption: 0
      })
      return yield* store.ensure({
        sourceEventId: source,
        runId,
        workflowRef: "nightly-report",
        targetSessionId: sessionId,
        cause: "failed",
        nodeId: "collect",
        attemptId: "att-restart-1",
        facts: pendingFacts(runId),
        eligible: true
      })
    }).pipe(Effect.provide(layerSqlite({ filename: dbPath })), Effect.scoped)
  )

export const restartPending: Scenario = {
  id: "restart",
  title: "Pi restarts with a pending eligible intent: one fallback at session start",
  interruption: "restart with pending intent",
  workflows: {},
  script: [{ text: "Hello." }, { text: "I see the notice about the nightly report; checking its status." }],
  expected: {
    requests: 2,
    steps: 0,
    presentations: 0,
    fallbacks: 1,
    intents: ["failed → fallback"],
    runs: []
  },
  play: async (lab, check) => {
    await lab.say("hello")
    const sessionId = await lab.sessionId()
    await lab.stop()
    const intent = await writeEligibleIntent(lab.dbPath, sessionId)
    check("the intent was written eligible", intent.eligibleAt !== null && intent.resolvedAt === null)
    await lab.resume()
    await lab.settle(0, { until: () => lab.intentsResolved(1), label: "the intent is resolved" })
    await lab.stop()
    await lab.resume()
    await lab.settle(0, { requireSettle: false })
    check("a second restart sends nothing", lab.mock.requestCount() === 2, String(lab.mock.requestCount()))
  },
  verify: (observation, lab, check) => {
    check("the 2nd request is the fallback", lastMessageOf(lab, 1).includes("the runner's host went away"))
    oneIntentResolvedBy(observation, check, "fallback")
  }
}
