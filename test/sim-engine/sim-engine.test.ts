/**
 * The engine simulation's quick batch (the long run: `npm run sim:engine -- --runs N`):
 * seeded schedules over the real application graph (also with waiting checkpoints) must keep
 * every invariant, and a world that
 * deliberately breaks delivery must be caught, so the checker itself can fail.
 */
import { describe, expect, it } from "vitest"
import { runEngineSeed } from "./runner.ts"

const QUICK_SEEDS = Array.from({ length: 60 }, (_, i) => i + 1)

describe("engine simulation", () => {
  it("60 seeded schedules (two processes, faults on both stores, crashes, shutdowns): no violation", async () => {
    const failures: Array<string> = []
    for (const seed of QUICK_SEEDS) {
      const result = await runEngineSeed(seed)
      if (result.violations.length > 0) failures.push(`seed ${seed}: ${result.violations.join("; ")}`)
    }
    expect(failures).toEqual([])
  }, 120_000)

  it("40 schedules with waiting checkpoints (questions, answers by the model and the user): no violation, and questions were asked and answered", async () => {
    const failures: Array<string> = []
    let questions = 0
    let answers = 0
    for (let seed = 1; seed <= 40; seed++) {
      const result = await runEngineSeed(seed, { waits: true })
      questions += result.stats.questions ?? 0
      answers += result.stats.answers ?? 0
      if (result.violations.length > 0) failures.push(`seed ${seed}: ${result.violations.join("; ")}`)
    }
    expect(failures).toEqual([])
    // Not vacuous: the schedules reached the checkpoints and got past some of them.
    expect(questions).toBeGreaterThan(3)
    expect(answers).toBeGreaterThan(0)
  }, 120_000)

  it("two live processes on one session: a completed run gets one terminal message (seeds 57, 66)", async () => {
    // Both seeds once presented one completed run from both processes; the run's terminal turn
    // intent now lets only one of its presentation and its fallback through.
    for (const seed of [57, 66]) {
      const result = await runEngineSeed(seed)
      expect(result.violations).toEqual([])
    }
  })

  it("one run never gets two terminal messages (seeds 896, 1808, 1911, 426, 1572)", async () => {
    // Each run owned two intents (a claim loss, then the agent's cancel) and each got its own
    // fallback; an old owner's late abort now keeps the intent the run's end owes.
    for (const seed of [896, 1808, 1911, 426, 1572]) {
      const result = await runEngineSeed(seed)
      expect(result.violations).toEqual([])
    }
  }, 60_000)

  it("a claim loss after the new owner's newer prompt owes no intent: one terminal message for the cancelled run (seed 9407)", async () => {
    // The old owner learned of its loss after the new owner had sent the prompt of a newer
    // attempt and recorded a claim-loss intent; the agent's cancel under the new owner then
    // owed its own. The newer prompt is the successor, so the old owner now records nothing.
    const result = await runEngineSeed(9407)
    expect(result.violations).toEqual([])
  })

  it("a recovery prompt sent while the intent store failed answers its timeout: one fallback for the cancelled run (seed 666)", async () => {
    // The timeout's recovery prompt went out without its intent (listing intents failed), then
    // the agent cancelled: both intents got a fallback. The prompt now carries the timeout's
    // intent, and branch repair resolves it (test/engine/answered-interruption.test.ts).
    const result = await runEngineSeed(666)
    expect(result.violations).toEqual([])
  }, 60_000)

  it("a timed-out step whose route completed the run: one terminal message, not a presentation and a fallback (seed 5454)", async () => {
    // The same family as 666 for a completed run: the timeout's intent and the completed run's
    // intent were each answered; fixed by the same answered-abort change.
    const result = await runEngineSeed(5454)
    expect(result.violations).toEqual([])
  }, 60_000)

  it("an agent cancel the runner applies between steps owes its terminal turn (seeds 794, 1339, 1494, 2202, 2211, 861, 2500)", async () => {
    // The runner applied the agent's cancel at a step boundary (the run was parked or between
    // steps) without provenance, so the model never heard of the cancelled run.
    for (const seed of [794, 1339, 1494, 2202, 2211, 861, 2500]) {
      const result = await runEngineSeed(seed)
      expect(result.violations).toEqual([])
    }
  }, 60_000)

  it("a lease renewal that dies does not leave a live runner's run claimed past its lease (seeds 747, 1058, 2425)", async () => {
    for (const seed of [747, 1058, 2425]) {
      const result = await runEngineSeed(seed)
      expect(result.violations).toEqual([])
    }
  }, 60_000)

  it("every schedule finishes: seeds 63 and 878, whose run's end retried on a clock nobody moved", async () => {
    // The killed process's scope waited for its runner, which slept between settle retries on
    // the simulated clock while the schedule waited for that scope: the schedule never returned.
    for (const seed of [63, 878]) {
      const result = await runEngineSeed(seed)
      expect(result.violations).toEqual([])
    }
  }, 60_000)

  it("a killed process acts on nothing: its runner's timeout does not abort the live session's turn (seed 2455)", async () => {
    // The killed process's step limit ended at once (its clock no longer waits) and its runner
    // aborted the turn the other process's session was in; that abort was taken for Escape.
    const result = await runEngineSeed(2455)
    expect(result.violations).toEqual([])
  }, 60_000)

  it("a runner past its lease does not land its end and go on (seed 4765)", async () => {
    // A settle retried past the runner's lease landed after the store healed; the runner went on
    // to its next step while the other process took the run over, whose abort (claim loss) the
    // other process took for Escape: the cancelled run's fallback was held back.
    const result = await runEngineSeed(4765)
    expect(result.violations).toEqual([])
  }, 60_000)

  it("a prompt whose abort's clear failed keeps its runner (seed 9779)", async () => {
    // The failed clear stopped the runner; the next owner took the answered timeout for
    // outstanding, and the agent's cancel reused its resolved intent: no terminal turn.
    const result = await runEngineSeed(9779)
    expect(result.violations).toEqual([])
  }, 60_000)

  it("the drain lifts a user hold the last escaped turn sets (seed 10305)", async () => {
    // World fix: a process died after sending a fallback and before resolving it; the schedule's
    // last turn was escaped, and its settle in the drain held the session after the drain had
    // lifted the hold, so the branch repair that resolves the fallback never ran.
    const result = await runEngineSeed(10305)
    expect(result.violations).toEqual([])
  }, 60_000)

  it("a schedule that cannot finish is reported as a violation within the wall-clock guard", async () => {
    const result = await runEngineSeed(1, { mutation: "hang", hangAfterMs: 2_000 })
    expect(result.violations.join("\n")).toMatch(/the schedule hung/)
  }, 30_000)

  it("the checker catches a world that sends every resolving message twice, or drops fallbacks", async () => {
    const caught = { doubleSend: 0, dropFallback: 0 }
    for (const seed of QUICK_SEEDS.slice(0, 30)) {
      for (const mutation of ["doubleSend", "dropFallback"] as const) {
        const result = await runEngineSeed(seed, { mutation })
        if (result.violations.length > 0) caught[mutation]++
      }
    }
    expect(caught.doubleSend).toBeGreaterThan(0)
    expect(caught.dropFallback).toBeGreaterThan(0)
  }, 120_000)
})
