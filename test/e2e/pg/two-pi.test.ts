/**
 * Real Pi on PostgreSQL: two Pi processes on two sessions share one database of a throwaway
 * cluster (started here; test/support/pg-cluster.ts). Pi A's workflow step times out, its
 * recovery prompt is owed, and Pi A is killed right after claiming that delivery; Pi B keeps
 * working in its own session. A new Pi on A's session takes the run over (a new claim token,
 * one more claim) and the interrupted turn's successor reaches A's session exactly once; B's
 * session never sees it. See docs/postgres.md.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Trial } from "../../crash/pi-crash.ts"
import { type Cluster, databaseUrl, startCluster, stopCluster } from "../../support/pg-cluster.ts"
import { pgQuery } from "../../support/backend.ts"
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

/** The step times out; the timed_out route's recovery prompt is the successor turn. */
const timeoutRecovery: Trial = {
  name: "natural",
  workflows: { "review.workflow.mjs": REVIEW },
  prompt: "Review the patch.",
  before: [
    { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "review" } }] },
    { text: "Queued." },
    { text: "Still reading…", delayMs: 1_500 }
  ],
  after: [{ text: "Deciding now." }]
}

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
    const outcome = await runTwoPi(url, timeoutRecovery, "afterClaim")
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
    // A's model: start, "queued", the timed-out step, the recovery prompt — nothing twice.
    expect(outcome.requestsA).toBe(4)
    // B's model: only B's own two prompts.
    expect(outcome.requestsB).toBe(2)
  }, 90_000)
})
