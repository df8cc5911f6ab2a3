/**
 * The abort path through the whole app: `runTool cancel` → abort over the fake Pi session, with
 * the store free and while a second process holds the write lock.
 */
import { Effect, Exit, Fiber, Scope } from "effect"
import { afterSettle, classifySettle } from "../src/app/session-hooks.ts"
import { runTool } from "../src/app/tool-actions.ts"
import { PiSessionFake } from "../src/session/pi-session-fake.ts"
import { holdWriteLockInProcess } from "../src/testing/store-faults.ts"
import { type AbortSamples, watchAborts } from "./abort-durability.ts"
import { nowUs } from "./fixtures.ts"
import { summarize } from "./stats.ts"

const STEP = "pi-workflows-agent-step"
const FALLBACK = "pi-workflows-deferred-turn"

export const cancelMe = {
  name: "cancel-me",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Do the thing.", timeoutMs: null } },
  edges: []
}

/** Poll (real clock) until `check` holds; the engine's runner works in its own fibers. */
const until = <A, E, R>(effect: Effect.Effect<A, E, R>, check: (a: A) => boolean, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 5_000; i++) {
      if (check(yield* effect)) return
      yield* Effect.sleep("1 millis")
    }
    return yield* Effect.dieMessage(`abort bench: timed out waiting for ${what}`)
  })

/** 1. `runTool cancel` → abort, in the whole app over the fake session. */
export const toolCallToAbort = (filename: string, runs: number) =>
  Effect.gen(function* () {
    const fake = yield* PiSessionFake
    const watch = yield* watchAborts(filename, true)
    const sent = (type: string) =>
      Effect.map(fake.sent, (s) => s.filter((r) => r.message.customType === type).length)
    const samples: Array<number> = []
    let notDurable = 0
    for (let i = 0; i < runs; i++) {
      // Pi gives every tool call an ID; a start from a run's terminal turn needs it.
      const started = yield* runTool(
        { _tag: "start", workflow: "cancel-me" },
        { toolCallId: `bench-start-${i}` }
      )
      const id = started.details.runId
      if (typeof id !== "string") return yield* Effect.dieMessage(`start failed: ${started.text}`)
      watch.runId = id
      // The queued run starts after the turn that started it settles; its step opens a turn.
      yield* afterSettle(false)
      yield* until(sent(STEP), (n) => n === i + 1, "the step message")
      watch.abortedAt = 0
      const start = nowUs()
      const reply = yield* runTool({ _tag: "cancel" })
      if (watch.abortedAt === 0) return yield* Effect.dieMessage(`cancel did not abort: ${reply.text}`)
      samples.push(watch.abortedAt - start)
      if (!watch.durable) notDurable++
      // Pi's agent_settled for the aborted turn, then the fallback turn and its settle.
      const held = yield* classifySettle(true)
      yield* fake.settle({ aborted: true })
      yield* afterSettle(held.userHold)
      yield* until(sent(FALLBACK), (n) => n === i + 1, "the fallback")
      yield* fake.settle()
      yield* afterSettle(false)
    }
    return { toAbort: summarize(samples), notDurable } satisfies AbortSamples
  })

/**
 * 4. `runTool cancel` → abort in the whole app while a second process holds the write lock
 * (taken after the step was sent, released after the abort): the bound the abort keeps under a
 * foreign lock. Afterwards the run must still end `cancelled` and get its one fallback.
 */
export const toolCallUnderForeignLock = (filename: string, runs: number) =>
  Effect.gen(function* () {
    const fake = yield* PiSessionFake
    let abortedAt = 0
    yield* fake.onAbort(
      Effect.sync(() => {
        abortedAt = nowUs()
      })
    )
    const sent = (type: string) =>
      Effect.map(fake.sent, (s) => s.filter((r) => r.message.customType === type).length)
    const samples: Array<number> = []
    let unfinished = 0
    for (let i = 0; i < runs; i++) {
      // Pi gives every tool call an ID; a start from a run's terminal turn needs it.
      const started = yield* runTool(
        { _tag: "start", workflow: "cancel-me" },
        { toolCallId: `bench-start-${i}` }
      )
      if (typeof started.details.runId !== "string") return yield* Effect.dieMessage(started.text)
      yield* afterSettle(false)
      yield* until(sent(STEP), (n) => n === i + 1, "the step message")
      abortedAt = 0
      const lock = yield* Scope.make()
      yield* holdWriteLockInProcess(filename).pipe(Scope.extend(lock))
      const start = nowUs()
      const cancel = yield* Effect.fork(runTool({ _tag: "cancel" }))
      yield* until(
        Effect.sync(() => abortedAt),
        (at) => at !== 0,
        "the abort under the lock"
      )
      samples.push(abortedAt - start)
      yield* Scope.close(lock, Exit.void)
      yield* Fiber.join(cancel)
      const held = yield* classifySettle(true)
      yield* fake.settle({ aborted: true })
      yield* afterSettle(held.userHold)
      const delivered = yield* Effect.either(
        until(sent(FALLBACK), (n) => n === i + 1 - unfinished, "the fallback")
      )
      if (delivered._tag === "Left") unfinished++
      yield* fake.settle()
      yield* afterSettle(false)
    }
    return { toAbort: summarize(samples), unfinished }
  })
