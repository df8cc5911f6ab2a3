/**
 * Child process for launch-crash.test.ts: one terminal-turn launch reservation on a real file,
 * killed with SIGKILL at `crashAt` — inside the transaction right after the run row was written
 * (`afterRun`), or right after the commit (`afterCommit`), or not at all (`none`). Prints the
 * reservation as one JSON line when it survives.
 */
import { Effect, Layer } from "effect"
import { Database } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import * as LaunchStoreSql from "../../src/store/launch-store-sql.ts"
import { LaunchStore } from "../../src/store/launch-store.ts"

const [filename = "", crashAt = "none", toolCallId = "call-1", runId = "run-2"] = process.argv.slice(2)
const kill = Effect.sync(() => process.kill(process.pid, "SIGKILL"))

const program = Effect.gen(function* () {
  const runs = yield* RunStore
  const create = Effect.tap(
    runs.reserve({
      runId,
      workflowName: "build",
      workflowRef: "build",
      revision: null,
      sourceFingerprint: "sha256:x",
      snapshot: {},
      targetSessionId: "s1",
      origin: "tool",
      input: { exact: true },
      startAt: "compile",
      maxSteps: 10
    }),
    () => (crashAt === "afterRun" ? kill : Effect.void)
  )
  const reserved = yield* (yield* LaunchStore).reserve(
    { kind: "start", lineage: null, terminal: { runId: "run-1", intentId: "deferred-turn:1" }, toolCallId },
    create
  )
  if (crashAt === "afterCommit") yield* kill
  process.stdout.write(`${JSON.stringify(reserved)}\n`)
})

const stores = Layer.merge(RunStoreSql.layer, LaunchStoreSql.layer).pipe(
  Layer.provideMerge(Database.layer({ filename }))
)
await Effect.runPromise(program.pipe(Effect.provide(stores)))
