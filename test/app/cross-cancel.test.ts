/**
 * The user cancels a run from another session (two app instances on one database, the fake Pi
 * session): the owner's runner takes the cancel at its next renewal and, while the owner's
 * model is still working on the step, that turn stops too. No turn follows in either session,
 * and an owner whose model had already finished its turn is not aborted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { freshLocation } from "../support/backend.ts"
import { eventually, FALLBACK, STEP, sentOfType, sessionApp } from "./support.ts"

const stateOf = (runId: string) =>
  Effect.map(Effect.orDie(Effect.flatMap(RunStore, (runs) => runs.get(runId))), (run) =>
    Option.match(run, { onNone: () => null, onSome: (r) => r.state })
  )

/** Session A runs `greet` to its step prompt; the model's turn on it is `working` or over. */
const ownerAtStep = (working: boolean) =>
  Effect.gen(function* () {
    const location = yield* freshLocation
    const a = yield* sessionApp(location, "sA")
    const b = yield* sessionApp(location, "sB")
    const started = yield* Effect.provide(runCommand({ _tag: "start", workflow: "greet", input: null }), a)
    const runId = String(started.details.runId)
    yield* Effect.provide(onSessionStart, a)
    yield* Effect.provide(
      eventually(sentOfType(STEP), (steps) => steps.length === 1),
      a
    )
    // The prompt started the model's turn; a model that answered in plain text has ended it.
    if (!working)
      yield* Effect.provide(
        Effect.flatMap(PiSessionFake, (fake) => fake.settle()),
        a
      )
    return { a, b, runId }
  })

describe("a direct cancel from another session", () => {
  it.live("stops the owner's turn on the step; no turn follows anywhere", () =>
    Effect.gen(function* () {
      const { a, b, runId } = yield* ownerAtStep(true)
      const cancelled = yield* Effect.provide(runCommand({ _tag: "cancel", runId }), b)
      expect(cancelled.isError).toBe(false)
      expect(cancelled.text).toContain("belongs to session sA")
      // A's runner takes the cancel at its next renewal (every 100 ms here) and stops the turn.
      yield* Effect.provide(
        eventually(
          Effect.flatMap(PiSessionFake, (fake) => fake.aborts),
          (n) => n === 1
        ),
        a
      )
      expect(yield* Effect.provide(stateOf(runId), a)).toBe("cancelled")
      // The aborted turn settles: it is not taken for the user's Escape, and nothing is sent.
      yield* Effect.provide(
        Effect.gen(function* () {
          const fake = yield* PiSessionFake
          yield* fake.settle({ aborted: true })
          expect((yield* classifySettle(true)).userHold).toBe(false)
          yield* afterSettle(false, { aborted: true })
          yield* Effect.sleep("200 millis")
          expect(yield* sentOfType(FALLBACK)).toEqual([])
          expect(yield* sentOfType(STEP)).toHaveLength(1)
        }),
        a
      )
      expect(yield* Effect.provide(sentOfType(FALLBACK), b)).toEqual([])
    }).pipe(Effect.scoped)
  )

  it.live("an owner whose model already ended its turn is not aborted", () =>
    Effect.gen(function* () {
      const { a, b, runId } = yield* ownerAtStep(false)
      expect((yield* Effect.provide(runCommand({ _tag: "cancel", runId }), b)).isError).toBe(false)
      yield* Effect.provide(
        eventually(stateOf(runId), (state) => state === "cancelled"),
        a
      )
      yield* Effect.sleep("200 millis")
      expect(
        yield* Effect.provide(
          Effect.flatMap(PiSessionFake, (fake) => fake.aborts),
          a
        )
      ).toBe(0)
      expect(yield* Effect.provide(sentOfType(FALLBACK), a)).toEqual([])
    }).pipe(Effect.scoped)
  )
})
