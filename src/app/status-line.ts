/**
 * The live status line of interactive Pi: while a run of this session is not ended, one footer
 * line (`PiSession.showStatus`, key `STATUS_LINE_KEY`) says its workflow, its node, how long it
 * has run, the time left to its step's limit, and its condition when it is not simply running
 * (`waiting for agent (reminder 1 of 2)`, `held (Escape)`, `parked (shutdown)`, …); the run's end
 * clears it. Only in Pi's terminal UI (`PiSession.terminalUi`): RPC, JSON and print modes see
 * nothing of it, and without one no timer runs at all.
 *
 * Cheap: the line is drawn from what was last read, once per `TimingPolicy.statusLineTick`. It
 * learns of changes from the engine's own writes: `layer` decorates the RunStore the engine
 * writes through, and each write of a run (claim, step start, limit, request, submit, settle,
 * renewal, pause, cancel) wakes the line, which then rereads that run (one row, its steps and
 * its reminder count, when the app has a StepReminderStore).
 * It rereads at least every `statusLineRefresh` too, for what no write of this process shows
 * (a lease running out, another process's write).
 */
import { Clock, Duration, Effect, Layer, Option, Queue, Ref } from "effect"
import { redactText } from "../domain/redact.ts"
import { conditionLabel, runCondition } from "../domain/run-condition.ts"
import { currentDeadline, inFlight } from "../domain/step-deadline.ts"
import { duration } from "../domain/text.ts"
import { TimingPolicy } from "../domain/timing-policy.ts"
import { PiSession } from "../session/pi-session.ts"
import { remindersOf } from "./reminded.ts"
import {
  isTerminal,
  type RunRecord,
  RunStore,
  type RunStoreService,
  type StepRecord
} from "../store/run-store.ts"

/** Whole seconds (`0s` under one), as an elapsed time reads on a line redrawn each second. */
const elapsed = (ms: number): string => (ms < 1_000 ? "0s" : duration(Math.floor(ms / 1_000) * 1_000))

/** The footer key of the live status line (one per session; progress lines are per run). */
export const STATUS_LINE_KEY = "pi-workflows-status"

/**
 * The line for `run` at `now` (pure). `remindersSent`: step reminders sent for the attempt of
 * the run's open request (0 until reminders are counted).
 */
export const statusLineText = (
  run: RunRecord,
  steps: ReadonlyArray<StepRecord>,
  now: number,
  remindersSent = 0
): string => {
  const condition = runCondition(run, now, remindersSent)
  const parts = [`workflow ${run.workflowName}`]
  if (run.currentNodeId !== null) parts.push(run.currentNodeId)
  const started = Date.parse(run.startedAt ?? run.createdAt)
  if (Number.isFinite(started)) parts.push(`${elapsed(now - started)} elapsed`)
  const moving = condition._tag === "Running" || condition._tag === "WaitingForAgent"
  if (moving || condition._tag === "Pausing" || condition._tag === "Cancelling") {
    const deadline = currentDeadline(steps)
    const last = steps[steps.length - 1]
    if (deadline !== null) parts.push(deadline > now ? `${duration(deadline - now)} left` : "limit reached")
    else if (last !== undefined && inFlight(last) && last.timeoutMs === null) parts.push("no limit known")
  }
  if (condition._tag !== "Running") parts.push(conditionLabel(condition))
  return redactText(parts.join(" · "))
}

interface Shown {
  readonly run: RunRecord
  readonly steps: ReadonlyArray<StepRecord>
  /** Step reminders sent for the attempt the run stands at. */
  readonly reminders: number
  readonly readAt: number
}

/** The run store's writes that wake the line, each with the run it writes. */
const watchWrites = (
  store: RunStoreService,
  wake: (runId: string) => Effect.Effect<void>
): RunStoreService => {
  const after =
    (runId: string) =>
    <A, E>(write: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.tap(write, () => wake(runId))
  return {
    ...store,
    claim: (input) => after(input.runId)(store.claim(input)),
    renew: (fence, leaseMs) => after(fence.runId)(store.renew(fence, leaseMs)),
    startStep: (fence, input) => after(fence.runId)(store.startStep(fence, input)),
    recordLimit: (fence, input) => after(fence.runId)(store.recordLimit(fence, input)),
    openRequest: (fence, input) => after(fence.runId)(store.openRequest(fence, input)),
    submit: (fence, input) => after(fence.runId)(store.submit(fence, input)),
    settle: (fence, settlement) => after(fence.runId)(store.settle(fence, settlement)),
    advance: (fence, settlement) => after(fence.runId)(store.advance(fence, settlement)),
    requestPause: (runId) => after(runId)(store.requestPause(runId)),
    withdrawPause: (runId) => after(runId)(store.withdrawPause(runId)),
    cancel: (runId, by) => after(runId)(store.cancel(runId, by))
  }
}

/**
 * The RunStore the engine writes through, watched, and the status line's scoped fiber. The
 * line reads through the store it decorates (its own reads wake nothing).
 */
export const layer: Layer.Layer<RunStore, never, RunStore | PiSession> = Layer.scoped(
  RunStore,
  Effect.gen(function* () {
    const store = yield* RunStore
    const session = yield* PiSession
    const policy = yield* TimingPolicy
    const woken = yield* Queue.sliding<string>(64)
    const watched = watchWrites(store, (runId) => Effect.asVoid(Queue.offer(woken, runId)))
    const tick = policy.statusLineTick
    if (tick === null) return watched
    const refreshMs = Duration.toMillis(policy.statusLineRefresh)
    const shown = yield* Ref.make<Shown | null>(null)
    const drawn = yield* Ref.make<string | undefined>(undefined)

    const draw = (text: string | undefined) =>
      Effect.flatMap(Ref.getAndSet(drawn, text), (before) =>
        before === text ? Effect.void : session.showStatus(STATUS_LINE_KEY, text)
      )

    /** Reread `runId`: it becomes the run shown (or, ended or another session's, is dropped). */
    const reread = (runId: string, sessionId: string, now: number) =>
      Effect.gen(function* () {
        const found = yield* store.get(runId)
        const current = yield* Ref.get(shown)
        if (Option.isNone(found) || found.value.targetSessionId !== sessionId) return
        if (isTerminal(found.value.state)) {
          if (current?.run.runId === runId) yield* Ref.set(shown, null)
          return
        }
        const steps = yield* store.steps(runId)
        yield* Ref.set(shown, {
          run: found.value,
          steps,
          reminders: yield* remindersOf(found.value),
          readAt: now
        })
      })

    const pass = (runIds: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const sessionId = yield* session.sessionId
        const now = yield* Clock.currentTimeMillis
        for (const runId of new Set(runIds)) yield* reread(runId, sessionId, now)
        const current = yield* Ref.get(shown)
        if (current !== null && current.run.targetSessionId !== sessionId) yield* Ref.set(shown, null)
        else if (current !== null && runIds.length === 0 && now - current.readAt >= refreshMs) {
          yield* reread(current.run.runId, sessionId, now)
        }
        const latest = yield* Ref.get(shown)
        yield* draw(
          latest === null ? undefined : statusLineText(latest.run, latest.steps, now, latest.reminders)
        )
      }).pipe(Effect.catchAllCause((cause) => Effect.logDebug("workflow status line not redrawn", cause)))

    const loop = Effect.gen(function* () {
      // Without a terminal UI: no timer, only writes wake the loop (and it draws nothing).
      if (!(yield* session.terminalUi)) {
        yield* Queue.take(woken)
        yield* Queue.takeAll(woken)
        return
      }
      const first = yield* Queue.take(woken).pipe(Effect.timeoutOption(tick))
      const rest = yield* Queue.takeAll(woken)
      yield* pass([...Option.toArray(first), ...rest])
    })
    yield* loop.pipe(Effect.forever, Effect.forkScoped)
    // The session's app closes (shutdown, a switch of sessions): no line stays behind.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Ref.get(drawn), (text) =>
        text === undefined ? Effect.void : session.showStatus(STATUS_LINE_KEY, undefined)
      )
    )
    return watched
  })
)
