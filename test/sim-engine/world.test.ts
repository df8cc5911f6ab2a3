/**
 * The simulated world keeps a SIGKILL's meaning: a killed process runs no code, so nothing it
 * left behind (its runner timing out, its retries) may act on the session that lives on.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Clock, Effect, Logger, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { makeSimClock } from "../sim/sim-clock.ts"
import { makeWorld } from "./world.ts"

describe("engine simulation world", () => {
  it("a killed process does not abort the turn of the session that lives on (seed 2455)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pwt-eworld-"))
    const clock = makeSimClock()
    const program = Effect.gen(function* () {
      const world = yield* makeWorld(join(dir, "controller.db"), clock, null)
      yield* world.startProc(0)
      yield* world.startProc(1)
      let index = 0
      const run = (step: Parameters<typeof world.execute>[0]) =>
        Effect.zipRight(world.execute(step, index++), clock.quiesce)
      // p0 runs a workflow whose agent step (with a limit) is in the model's turn when p0 is
      // killed: the limit's sleep ends at once in the dead process, and its runner times out.
      yield* run({ _tag: "ToolStart", proc: 0, workflow: "timed" })
      yield* run({ _tag: "Settle" })
      yield* run({ _tag: "ToolStart", proc: 1, workflow: "greet" })
      const before = { phase: yield* world.fake.phase, aborts: yield* world.fake.aborts }
      yield* run({ _tag: "Crash", proc: 0 })
      const after = { phase: yield* world.fake.phase, aborts: yield* world.fake.aborts }
      for (const p of world.live()) yield* world.kill(p.slot)
      return { before, after }
    })
    try {
      const { before, after } = await Effect.runPromise(
        program.pipe(
          Effect.withClock(clock),
          Effect.scoped,
          Logger.withMinimumLogLevel(LogLevel.None),
          Effect.withClock(Clock.make())
        )
      )
      expect(before).toEqual({ phase: "busy", aborts: 0 })
      // Before the fix the killed runner's timeout aborted the turn: "aborting", 1.
      expect(after).toEqual({ phase: "busy", aborts: 0 })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
