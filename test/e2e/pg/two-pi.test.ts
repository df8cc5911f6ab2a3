/**
 * Real Pi on PostgreSQL: two Pi processes on two sessions share one database of a throwaway
 * cluster (started here; test/support/pg-cluster.ts). Pi A's workflow step times out, its
 * recovery prompt is owed, and Pi A is killed right after claiming that delivery; Pi B keeps
 * working in its own session. A new Pi on A's session takes the run over (a new claim token,
 * one more claim) and the interrupted turn's successor reaches A's session exactly once; B's
 * session never sees it. The model answers the recovery prompt in plain text, so A's session
 * then gets the recovery step's two step reminders and the user's notice, and B's nothing. See
 * docs/postgres.md.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Trial } from "../../crash/pi-crash.ts"
import { type Cluster, databaseUrl, startCluster, stopCluster } from "../../support/pg-cluster.ts"
import { pgQuery } from "../../support/backend.ts"
import { customMessages } from "../harness/session-file.ts"
import { runTwoPi } from "./two-pi.ts"

const REVIEW = `export default {
  name: "review",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review the patch and answer {\\"approved\\": boolean}.", timeoutMs: 300 },
    recover: { type: "agent", prompt: "The review timed out. Decide now: {\\"approved\\": boolean}.", timeoutMs: null }
  },
  edges: [{ from: "review", switch: { on: "$result.outcome", cases: { timed_out: "recover" } } }]
}
`

/**
 * The step times out; the timed_out route's recovery prompt is the successor turn. The new
 * process's model answers it in plain text (no submit), and each of its two step reminders too.
 */
const timeoutRecovery: Trial = {
  name: "natural",
  workflows: { "review.workflow.mjs": REVIEW },
  prompt: "Review the patch.",
  before: [
    { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "review" } }] },
    { text: "Queued." },
    { text: "Still reading…", delayMs: 1_500 }
  ],
  after: [{ text: "Deciding now." }, { text: "Still deciding." }, { text: "Deciding later." }]
}

/** A's session is done once the user's notice after the recovery step's two reminders is in it. */
const noticed = (sessionFile: string) =>
  customMessages(sessionFile, "pi-workflows-notification").some(
    (entry) =>
      typeof entry.details === "object" &&
      entry.details !== null &&
      "kind" in entry.details &&
      entry.details.kind === "stepWaiting"
  )

let cluster: Cluster | undefined
let url = ""

beforeAll(async () => {
  cluster = startCluster()
  await pgQuery(cluster.adminUrl, "CREATE DATABASE two_pi")
  url = databaseUrl(cluster.adminUrl, "two_pi")
}, 60_000)

afterAll(() => {
  if (cluster !== undefined) stopCluster(cluster)
})

describe("two Pi processes on one PostgreSQL database", () => {
  it("the run's claim moves to the new process on A's session; the successor reaches A once, never B", async () => {
    const outcome = await runTwoPi(url, timeoutRecovery, "afterClaim", noticed)
    console.log(
      `two Pi on PostgreSQL: A ${outcome.signal}; run claims ${outcome.runAtKill.map((r) => r.claims).join(",")} → ` +
        `${outcome.runs.map((r) => r.claims).join(",")}; intents ${outcome.intents.map((i) => `${i.cause}→${i.resolution}`).join(",")}; ` +
        `messages in A ${Object.values(outcome.inA).join(",")}, in B ${Object.values(outcome.inB).join(",")}; ` +
        `requests A ${outcome.requestsA}, B ${outcome.requestsB}`
    )
    expect(outcome.signal).toBe("SIGKILL")
    // The run belongs to A's session; A's first process held its claim when it died.
    expect(outcome.runAtKill.map((r) => r.target_session_id)).toEqual([outcome.sessionA])
    const before = outcome.runAtKill[0]
    const after = outcome.runs[0]
    expect(before?.claim_token).not.toBeNull()
    // The new process took the run over: one more claim, under a token of its own, and it runs
    // the recovery node (waiting for the model's answer to the recovery prompt).
    expect(after?.claims ?? 0).toBe((before?.claims ?? 0) + 1)
    expect(after?.claim_token).not.toBeNull()
    expect(after?.claim_token).not.toBe(before?.claim_token)
    expect(after?.state).toBe("running")
    // The interrupted turn's successor: one intent, resolved by the recovery prompt, one message in A.
    expect(outcome.intents.map((i) => [i.cause, i.resolution, i.target_session_id])).toEqual([
      ["timedOut", "workflowPrompt", outcome.sessionA]
    ])
    expect(Object.values(outcome.inA)).toEqual([1])
    expect(Object.values(outcome.inB)).toEqual([0])
    // A's model: start, "queued", the timed-out step, the recovery prompt — nothing twice —
    // then the recovery step's two reminders (it was answered in plain text), nothing more.
    expect(outcome.requestsA).toBe(6)
    const [prompt, started, review, recovery, ...reminded] = outcome.newestA
    expect(prompt).toBe("Review the patch.")
    expect(started).toContain("review")
    expect(review).toContain("Review the patch and answer")
    const RECOVERY = "The review timed out. Decide now"
    expect(recovery).toContain(RECOVERY)
    expect(outcome.newestA.filter((text) => text.includes(RECOVERY))).toHaveLength(1)
    expect(reminded.map((text) => text.split(":")[0])).toEqual(["Reminder 1 of 2", "Reminder 2 of 2"])
    for (const text of reminded) expect(text).toContain('waiting for step "recover"')
    // The reminders are A's session's, for the recovery step of A's run: none reaches B.
    expect(outcome.remindersA).toMatchObject([
      { runId: after?.run_id, nodeId: "recover", reminder: 1 },
      { runId: after?.run_id, nodeId: "recover", reminder: 2 }
    ])
    expect(outcome.remindersB).toEqual([])
    expect(outcome.noticesA).toEqual(["stepWaiting"])
    expect(outcome.noticesB).toEqual([])
    // B's model: only B's own two prompts.
    expect(outcome.requestsB).toBe(2)
  }, 90_000)
})
