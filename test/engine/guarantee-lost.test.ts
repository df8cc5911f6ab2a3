/**
 * When the core reports that the successor-turn guarantee is lost for a terminal event (the
 * intent could be stored neither at abort time nor by terminal handling), the engine records
 * it on the run as a durable `guaranteeLost` event, and the run's status shows it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { until } from "../support/poll.ts"
import { crashing } from "../support/workflows.ts"
import { makeHarness } from "./support/harness.ts"

const crash = crashing("boom")

describe("guarantee lost", () => {
  it.live("a terminal event whose intent could not be stored leaves a run event in the status", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({
        definitions: [crash],
        warning: (event) => (event._tag === "RunTerminal" ? "the guarantee is lost (test)" : null)
      })
      const runId = yield* h.launch("crash")
      yield* h.engine.await(runId)
      const events = yield* until(
        Effect.map(h.engine.status(runId), (status) => status.events),
        (events) => events.length > 0,
        "a run event"
      )
      expect(events.map((e) => [e.kind, e.message])).toEqual([
        ["guaranteeLost", "the guarantee is lost (test)"]
      ])
      const status = yield* h.engine.status(runId)
      expect(status.state).toBe("failed")
    }).pipe(Effect.scoped)
  )
})
