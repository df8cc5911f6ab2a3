/**
 * A tour of the TurnIntentStore on a throwaway SQLite file: record an interruption, make it
 * fallback-eligible, claim it the way a fallback sync pass would, resolve it, and list the result.
 *
 *   npm run example        (node --experimental-strip-types examples/store.ts)
 *   npm run example -- --keep   keep the database and print the CLI command that reads it
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Console, Effect, Option } from "effect"
import { FACTS_SCHEMA } from "../src/domain/facts.ts"
import { resolutionMessageId } from "../src/domain/identity.ts"
import type { TurnIntent } from "../src/domain/turn-intent.ts"
import { TurnIntentStore } from "../src/store/turn-intent-store.ts"
import { layerSqlite } from "../src/store/turn-intent-store-sql.ts"

const describe = (intent: TurnIntent) =>
  [
    `  intent      ${intent.intentId}`,
    `  run         ${intent.runId} (${intent.workflowRef}), node ${intent.nodeId ?? "$launch"}, cause ${intent.cause}`,
    `  session     ${intent.targetSessionId}`,
    `  requested   ${intent.requestedAt}`,
    `  eligible    ${intent.eligibleAt ?? "no"}`,
    `  claim       ${intent.deliveryClaimToken === null ? "none" : `${intent.deliveryClaimToken} until ${new Date(intent.deliveryClaimExpiresAt ?? 0).toISOString()}`}`,
    `  resolved    ${intent.resolvedAt === null ? "pending" : `${intent.resolvedAt} by ${intent.resolution} (${intent.resolutionMessageId})`}`
  ].join("\n")

const tour = Effect.gen(function* () {
  const store = yield* TurnIntentStore
  const runId = "20260821T081731Z-autoimplement-407480dd"

  // 1. A queued launch failed: the intent is created eligible straight away.
  const launchFailure = {
    sourceEventId: "source-event:launch-1",
    runId,
    workflowRef: "autoimplement",
    targetSessionId: "session-demo",
    cause: "launchFailed",
    nodeId: null,
    attemptId: null,
    eligible: true,
    facts: {
      schema: FACTS_SCHEMA,
      workflowName: "autoimplement",
      runId,
      observedState: "failed",
      cause: "launchFailed",
      nodeId: "$launch",
      attemptId: null,
      reason: "scope must be a non-empty string",
      handoff: false
    }
  } as const
  const created = yield* store.ensure(launchFailure)
  yield* Console.log(`1. ensure created the intent:\n${describe(created)}`)

  // Retrying the same source event is a no-op that returns the same record.
  const again = yield* store.ensure(launchFailure)
  yield* Console.log(`2. ensure again returns the same intent: ${again.intentId === created.intentId}`)

  // 2. The fallback sync pass claims eligible intents for its session with a short lease.
  const claimed = yield* store.claimEligibleForSession({
    targetSessionId: "session-demo",
    token: "fallback-sync:1",
    leaseMs: 30_000,
    limit: 10
  })
  yield* Console.log(`3. fallback sync claimed ${claimed.length} intent(s)`)

  // A natural prompt for the same run finds nothing to claim while that lease is live.
  const natural = yield* store.claimForRun({
    runId,
    targetSessionId: "session-demo",
    token: "natural:1",
    leaseMs: 30_000
  })
  yield* Console.log(
    `4. a competing natural claim got: ${Option.isSome(natural) ? "an intent (bug!)" : "nothing"}`
  )

  // 3. After sending the fallback message, the holder resolves the intent.
  const resolved = yield* store.resolve({
    intentId: created.intentId,
    token: "fallback-sync:1",
    resolution: "fallback",
    messageId: resolutionMessageId(created.intentId, "fallback")
  })
  yield* Console.log(`5. resolved:\n${describe(resolved)}`)

  // A second resolve, even by the same holder, is refused: one intent, one successor message.
  const twice = yield* Effect.flip(
    store.resolve({
      intentId: created.intentId,
      token: "fallback-sync:1",
      resolution: "fallback",
      messageId: "x"
    })
  )
  yield* Console.log(`6. resolving again fails: ${twice.message}`)

  const listed = yield* store.list({ targetSessionId: "session-demo", state: "all", limit: 10 })
  yield* Console.log(
    `7. list: ${listed.length} intent(s) for session-demo, ${listed.filter((i) => i.resolvedAt === null).length} pending`
  )
})

// --keep: leave the database for the operator CLI instead of removing it.
const keep = process.argv.slice(2).includes("--keep")
const dir = mkdtempSync(join(tmpdir(), "pwt-example-"))
const filename = join(dir, "controller.db")
Effect.runPromise(
  Effect.zipRight(Console.log(`controller store: ${filename}\n`), tour).pipe(
    Effect.provide(layerSqlite({ filename }))
  )
)
  .then(() => {
    if (keep) console.log(`\nkept; read it with the CLI: node dist/cli.js intents --db ${filename}`)
  })
  .catch((error: unknown) => {
    console.error(`example failed: ${String(error)}`)
    process.exitCode = 1
  })
  .finally(() => {
    if (!keep) rmSync(dir, { recursive: true, force: true })
  })
