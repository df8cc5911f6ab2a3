/**
 * Claim transfer with two real processes: each runs the whole application graph (`App.layer`)
 * over one SQLite file, with a fake Pi session for the same session ID (app-worker.ts). A runs
 * the agent step and renews rarely; its lease runs out, B takes the run over (its rerun of the
 * step waits at a gate), A notices at its next renewal and its turn is aborted. Then B's run
 * ends: it fails before prompting, it prompts and completes, or the user cancels it directly
 * (quiet: no message for the run, A's claim-loss intent retired or never stored).
 *
 * Judged by what the model saw (both processes' session branches) and by the database: exactly
 * one intent for the interruption (A's claim-loss intent, reused and made eligible or resolved by
 * B's prompt), no second intent for it (cause `failed` or any other), and exactly one message in
 * the two branches that carries it. When B's prompt answered it and the run then completes, the
 * completion owes its own terminal turn: one presentation, with an intent of its own.
 */
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schedule, Schema } from "effect"
import * as App from "../../src/app/layers.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { type NodeChild, spawnNode } from "../support/node-child.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { decodeAnswer } from "./app-protocol.ts"

const WORKER = fileURLToPath(new URL("./app-worker.ts", import.meta.url))
const STEP = "pi-workflows-agent-step"
const FALLBACK = "pi-workflows-deferred-turn"
const PRESENTATION = "pi-workflows-presentation"

interface Worker {
  readonly call: (command: Record<string, unknown>) => Effect.Effect<unknown>
}

/** Spawn one app process; it is ended (stdin closed, then killed) when the scope closes. */
const spawnApp = (dbPath: string, leaseMs: number, renewEveryMs: number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly child: NodeChild; readonly worker: Worker }, Error>((resume) => {
      const child = spawnNode(WORKER, [dbPath, String(leaseMs), String(renewEveryMs)], process.cwd())
      const waiting = new Map<number, (value: unknown) => void>()
      let next = 1
      let buffer = ""
      let stderr = ""
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk
      })
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        buffer += chunk
        const lines = buffer.split("\n")
        buffer = lines.pop() ?? ""
        for (const line of lines) {
          // The worker's log lines (Effect's logger) go to stdout too: keep them for diagnostics.
          if (!line.startsWith('{"id":')) {
            stderr += `${line}\n`
            continue
          }
          const answer = decodeAnswer(line)
          if (answer.id === 0) {
            resume(
              Effect.succeed({
                child,
                worker: {
                  call: (command) =>
                    Effect.async<unknown>((done) => {
                      const id = next++
                      waiting.set(id, (value) => done(Effect.succeed(value)))
                      child.stdin.write(`${JSON.stringify({ ...command, id })}\n`)
                    })
                }
              })
            )
          }
          waiting.get(answer.id)?.(answer.value)
          waiting.delete(answer.id)
        }
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`app worker exited ${code}: ${stderr}`))))
    }),
    ({ child }) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        const kill = setTimeout(() => child.kill("SIGKILL"), 3_000)
        child.once("exit", () => {
          clearTimeout(kill)
          resume(Effect.void)
        })
        child.stdin.end()
      })
  ).pipe(Effect.map(({ worker }) => worker))

const Observed = Schema.Struct({
  aborts: Schema.Number,
  phase: Schema.String,
  branch: Schema.Array(
    Schema.Struct({ entryId: Schema.String, customType: Schema.String, details: Schema.Unknown })
  )
})
const observe = (worker: Worker) =>
  Effect.map(worker.call({ _tag: "observe" }), Schema.decodeUnknownSync(Observed))

const RunId = Schema.Struct({ details: Schema.Struct({ runId: Schema.String }) })

/** Poll until `check` passes, failing after ~10 s (two Node processes on a loaded machine). */
const until = <A>(effect: Effect.Effect<A>, check: (a: A) => boolean, what: string) =>
  effect.pipe(
    Effect.filterOrFail(check, () => new Error(`not reached: ${what}`)),
    Effect.retry(Schedule.spaced("25 millis").pipe(Schedule.upTo("10 seconds"))),
    Effect.orDie
  )

const runState = (worker: Worker, runId: string) => worker.call({ _tag: "run", runId })

const carries = (details: unknown, intentId: string) =>
  typeof details === "object" && details !== null && "turnIntentId" in details
    ? details.turnIntentId === intentId
    : false

type Ending = "fails before prompting" | "completes" | "is cancelled by the user"
const endState: Record<Ending, string> = {
  "fails before prompting": "failed",
  completes: "completed",
  "is cancelled by the user": "cancelled"
}

/**
 * `late`: A notices the loss only after B's run has ended (A renews after 5 s), so A's abort
 * finds no owner to hand off to and publishes the no-successor handoff itself.
 */
const scenario = (origin: "tool" | "command", ending: Ending, late: boolean) =>
  Effect.gen(function* () {
    const dbPath = yield* tempDbPath
    // A renews rarely: its lease runs out, B takes over, A's next renewal finds the loss.
    const a = yield* spawnApp(dbPath, 150, late ? 5_000 : 600)
    const b = yield* spawnApp(dbPath, 60_000, 20_000)
    const stores = yield* Layer.build(App.layerStores({ filename: dbPath }))
    const intents = yield* Effect.provide(TurnIntentStore, stores)
    const listIntents = (runId: string) => Effect.orDie(intents.list({ runId, limit: 10 }))

    const started = Schema.decodeUnknownSync(RunId)(yield* a.call({ _tag: "start", origin }))
    const runId = started.details.runId
    yield* a.call({ _tag: "activate" })
    yield* until(observe(a), (o) => o.branch.some((m) => m.customType === STEP), "A's step prompt")

    yield* b.call({ _tag: "hold" })
    yield* Effect.sleep("300 millis") // past A's lease
    yield* b.call({ _tag: "resume", runId })
    // The user's direct cancel owes no turn: A, noticing only after it, stops its turn and stores
    // no intent; noticing before it, its claim-loss intent is retired by the cancel.
    const quiet = ending === "is cancelled by the user"
    const noticed = Effect.gen(function* () {
      yield* until(observe(a), (o) => o.aborts === 1, "A's turn aborted on claim loss")
      if (late && quiet) return yield* listIntents(runId)
      const list = yield* until(listIntents(runId), (l) => l.length > 0, "the interruption's intent")
      return list
    })
    const afterAbort = late ? [] : yield* noticed
    if (!late) expect(afterAbort.map((i) => [i.cause, i.eligibleAt === null])).toEqual([["claimLost", true]])

    switch (ending) {
      case "fails before prompting":
        yield* b.call({ _tag: "release", how: "throw" })
        break
      case "completes":
        yield* b.call({ _tag: "release", how: "prompt" })
        yield* until(observe(b), (o) => o.branch.some((m) => m.customType === STEP), "B's step prompt")
        yield* b.call({ _tag: "submit" })
        break
      case "is cancelled by the user":
        yield* b.call({ _tag: "userCancel", runId })
        yield* b.call({ _tag: "release", how: "throw" })
        break
    }
    yield* until(runState(b, runId), (state) => state === endState[ending], `run ${endState[ending]}`)
    const seen = late ? yield* noticed : afterAbort
    const intentId = seen[0]?.intentId ?? ""
    // A run that failed or completed before A noticed owes its own terminal turn: A's abort
    // keeps that intent (a completed run's is answered by its presentation).
    const cause = !late
      ? "claimLost"
      : ending === "fails before prompting"
        ? "failed"
        : ending === "completes"
          ? "completed"
          : "claimLost"

    // Both sessions settle and start again (reconciliation); whoever owes a successor pays it.
    for (let round = 0; round < 2; round++) {
      yield* a.call({ _tag: "settle", aborted: round === 0 })
      yield* b.call({ _tag: "settle", aborted: false })
      yield* a.call({ _tag: "sessionStart" })
      yield* b.call({ _tag: "sessionStart" })
    }
    const rows = yield* until(
      listIntents(runId),
      (list) => quiet || list.every((i) => i.resolvedAt !== null),
      "every intent resolved"
    )
    if (quiet) {
      // Retired (pending, never eligible) when A stored it before the cancel; none when after.
      expect(rows.map((i) => [i.intentId, i.cause, i.eligibleAt, i.resolution])).toEqual(
        late ? [] : [[intentId, "claimLost", null, null]]
      )
      const branches = [...(yield* observe(a)).branch, ...(yield* observe(b)).branch]
      expect(branches.filter((m) => m.customType === FALLBACK || m.customType === PRESENTATION)).toEqual([])
      return
    }
    // One intent for the one interruption: A's, reused; never a second one (cause `failed`).
    // B's prompt answered it when B's run completed afterwards: that end owes its own terminal
    // turn (the presentation), which used to be bound to A's resolved intent and never sent.
    const answered = ending === "completes" && !late
    expect(rows.map((i) => [i.intentId, i.cause])).toEqual([
      [intentId, cause],
      ...(answered ? [[rows[1]?.intentId, "completed"]] : [])
    ])
    expect(rows.map((i) => i.resolution)).toEqual(
      answered ? ["workflowPrompt", "presentation"] : [ending === "completes" ? "presentation" : "fallback"]
    )

    // What the model saw: exactly one message carrying it, across both processes' branches.
    const branches = [...(yield* observe(a)).branch, ...(yield* observe(b)).branch]
    expect(branches.filter((m) => carries(m.details, intentId))).toHaveLength(1)
    const fallbacks = branches.filter((m) => m.customType === FALLBACK)
    expect(fallbacks).toHaveLength(ending === "completes" ? 0 : 1)
    // A completed run's end: exactly one presentation.
    const presented = branches.filter((m) => m.customType === PRESENTATION)
    expect(presented).toHaveLength(ending === "completes" ? 1 : 0)
  }).pipe(Effect.scoped)

describe("claim transfer between two real processes on one database file", () => {
  for (const origin of ["tool", "command"] as const) {
    for (const ending of ["fails before prompting", "completes", "is cancelled by the user"] as const) {
      it.live(
        `${origin}-started run, the new owner's run ${ending}: one intent, one successor`,
        () => scenario(origin, ending, false),
        40_000
      )
      // A failure that owes its own terminal intent, then the old owner learns of its loss:
      // its abort keeps that one intent (before the fix, a second claim-loss intent followed).
      it.live(
        `${origin}-started run, the new owner's run ${ending} before the old owner notices: the handoff ends with one successor`,
        () => scenario(origin, ending, true),
        40_000
      )
    }
  }
})
