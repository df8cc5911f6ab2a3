/**
 * Durable facts about a run beside its state, one row each in `workflow_run_events`
 * (`run-events-sql.ts` reads and writes them).
 */
import { Schema } from "effect"

/** The kinds of event. */
export const RunEventKind = Schema.Literal("guaranteeLost", "presented", "adopted")
export type RunEventKind = typeof RunEventKind.Type

/**
 * The facts of an adoption (event kind `adopted`): the session the run belonged to, the one it
 * belongs to now, the pending turn intents that moved with it (each old ID and the ID it has
 * under the new session) and how many undelivered notifications followed.
 */
export const AdoptionFacts = Schema.Struct({
  fromSessionId: Schema.String,
  toSessionId: Schema.String,
  intents: Schema.Array(Schema.Struct({ from: Schema.String, to: Schema.String })),
  notifications: Schema.Number
})
export type AdoptionFacts = typeof AdoptionFacts.Type

export interface RunEvent {
  readonly runId: string
  readonly seq: number
  readonly kind: RunEventKind
  readonly message: string
  readonly at: string
  /** Kind `adopted`: its facts; null for every other kind. */
  readonly adoption: AdoptionFacts | null
}
