/** Whether an aborted turn's intent was durable at the abort, seen from a second connection. */
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import { PiSessionFake } from "../src/session/pi-session-fake.ts"
import { nowUs } from "./fixtures.ts"
import type { Summary } from "./stats.ts"

/** A read-only second connection: it sees an intent only once it is committed. */
const durableProbe = (filename: string) => {
  const db = new Sqlite(filename, { readonly: true, fileMustExist: true })
  const find = db.prepare(
    "SELECT count(*) FROM workflow_turn_intents WHERE run_id = ? AND cause = 'agentCancelled'"
  )
  return {
    stored: (runId: string) => Number(find.pluck().get(runId)) === 1,
    close: () => db.close()
  }
}

export interface AbortSamples {
  /** Tool call (or publish) → the moment `abort` runs. */
  readonly toAbort: Summary
  /** Samples where the intent was not yet committed at the abort (must be 0). */
  readonly notDurable: number
}

/** What the latest abort saw: when it ran, and whether the watched run's intent was committed then. */
export interface AbortWatch {
  runId: string
  abortedAt: number
  durable: boolean
}

/** Record every abort of the fake session; with `durableCheck`, ask the probe about `runId` at that moment. */
export const watchAborts = (filename: string, durableCheck: boolean) =>
  Effect.gen(function* () {
    const fake = yield* PiSessionFake
    const probe = durableProbe(filename)
    yield* Effect.addFinalizer(() => Effect.sync(() => probe.close()))
    const watch: AbortWatch = { runId: "", abortedAt: 0, durable: false }
    yield* fake.onAbort(
      Effect.sync(() => {
        watch.abortedAt = nowUs()
        if (durableCheck) watch.durable = probe.stored(watch.runId)
      })
    )
    return watch
  })
