/** Whether an aborted turn's intent was durable at the abort, seen from a second connection. */
import Sqlite from "better-sqlite3"
import type { Summary } from "./stats.ts"

/** A read-only second connection: it sees an intent only once it is committed. */
export const durableProbe = (filename: string) => {
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
