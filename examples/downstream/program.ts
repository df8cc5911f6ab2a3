/**
 * A downstream Effect program on pi-workflow-turns: it composes the turn-intent store and the
 * successor-turn core into its own layer, with the fake Pi session from `./testing` in place of
 * a real one and Effect's TestClock driving the core's periodic fallback pass.
 *
 * A workflow run failed while nobody was waiting for it, so its session is owed one successor
 * turn. The program records that obligation, lets virtual time pass, and checks that the core
 * sent exactly one fallback message, which started exactly one model turn, and never a second.
 *
 *   node program.ts        (Node >= 22.18 runs TypeScript directly)
 */
import { Console, Effect, Layer, TestClock, TestContext } from "effect"
import { Core, Facts, TurnIntentStore } from "pi-workflow-turns"
import { layerFake, layerTempStore, PiSessionFake } from "pi-workflow-turns/testing"

const SESSION = "session-downstream"
const RUN = "20260101T000000Z-nightly-report-0a1b2c3d"

/** What a workflow engine records when a run fails with no turn left to report it. */
const recordFailedRun = Effect.gen(function* () {
  const store = yield* TurnIntentStore.TurnIntentStore
  return yield* store.ensure({
    sourceEventId: `source-event:${RUN}:failed`,
    runId: RUN,
    workflowRef: "nightly-report",
    targetSessionId: SESSION,
    cause: "failed",
    nodeId: null,
    attemptId: null,
    eligible: true,
    facts: {
      schema: Facts.FACTS_SCHEMA,
      workflowName: "nightly-report",
      runId: RUN,
      observedState: "failed",
      cause: "failed",
      nodeId: "collect",
      attemptId: null,
      reason: "the metrics database was unreachable",
      handoff: false
    }
  })
})

const program = Effect.gen(function* () {
  const pi = yield* PiSessionFake
  const intent = yield* recordFailedRun
  yield* Console.log(`recorded intent ${intent.intentId} (eligible: ${intent.eligibleAt !== null})`)

  // Nothing is sent until the core's periodic pass (every 10 s) finds the idle session.
  const before = (yield* pi.sent).length
  yield* TestClock.adjust("10 seconds")
  const sent = yield* pi.sent
  const details = sent[0]?.message.details
  const carriesIntent =
    typeof details === "object" && details !== null && "turnIntentId" in details
      ? details.turnIntentId === intent.intentId
      : false

  // The fallback's turn ends; later passes must find nothing left to send.
  yield* pi.settle()
  yield* TestClock.adjust("1 minute")
  const after = (yield* pi.sent).length
  const turns = yield* pi.triggeredTurns

  yield* Console.log(`sent before the pass: ${before}`)
  yield* Console.log(`fallbacks after the pass: ${sent.length}, carrying the intent: ${carriesIntent}`)
  yield* Console.log(`messages after a minute more: ${after}, model turns started: ${turns}`)
  if (before !== 0 || sent.length !== 1 || !carriesIntent || after !== 1 || turns !== 1) {
    return yield* Effect.fail(new Error("expected exactly one fallback turn"))
  }
  yield* Console.log("ok: exactly one successor turn")
})

/** The application layer: the core on a SQLite store and a (fake) Pi session. */
const AppLayer = Core.layer().pipe(
  Layer.provideMerge(Layer.merge(layerTempStore("pwt-downstream-"), layerFake({ sessionId: SESSION })))
)

Effect.runPromise(program.pipe(Effect.provide(AppLayer), Effect.provide(TestContext.TestContext))).catch(
  (error: unknown) => {
    console.error(`downstream example failed: ${String(error)}`)
    process.exitCode = 1
  }
)
