/**
 * Notifications: the authoring side of passive notifications. A step reports progress (a
 * compute node through `ctx.progress`, an agent step through the `workflow` tool's `progress`
 * action); each report is checked, rate-limited per run and stored, then shown by the Notifier.
 *
 * Rate: at most one stored progress per run per `minIntervalMs` (default 1 s), measured from
 * the run's newest stored progress row. A report inside the window is held in memory and
 * replaced by any newer one (coalesced); the newest is stored when the window ends, or at once
 * when the run ends (`flush`), before the run's `final`. Time is Effect's Clock.
 */
import { randomUUID } from "node:crypto"
import { Clock, Context, Effect, FiberMap, Layer, Option, Ref, Schema } from "effect"
import { type ForeignRun, foreignRun } from "../domain/identity.ts"
import { type StoreFailure, storeFailure } from "../store/store-errors.ts"
import { StepProgress } from "../engine/messages.ts"
import { Database } from "../store/database.ts"
import { NOTIFICATION_SCHEMA, NotificationStore } from "../store/notification-store.ts"
import { isTerminal, RunStore } from "../store/run-store.ts"
import { Notifier, progressProblem } from "./notifier.ts"

/** A progress report was refused; nothing was stored. */
export class ProgressRejected extends Schema.TaggedError<ProgressRejected>()("ProgressRejected", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

export interface ProgressReceipt {
  readonly runId: string
  /** `stored`: written now (and shown if this session owns the run); `coalesced`: held for the window. */
  readonly status: "stored" | "coalesced"
}

export interface NotificationsConfig {
  /** Least time between two stored progress reports of one run (default 1,000 ms). */
  readonly minIntervalMs?: number
}

interface Report {
  readonly runId: string
  readonly text: string
  readonly nodeId: string | null
  readonly attemptId: string | null
}

export interface NotificationsService {
  /** A report of a run's node (the runner knows the run). */
  readonly progress: (report: Report) => Effect.Effect<ProgressReceipt, ProgressRejected | StoreFailure>
  /** A report through the `workflow` tool: the request must be open and belong to this session's run. */
  readonly progressForRequest: (input: {
    readonly sessionId: string
    readonly requestId: string
    readonly text: string
  }) => Effect.Effect<ProgressReceipt, ProgressRejected | ForeignRun | StoreFailure>
  /** Store a held report of the run now (the run is about to end). */
  readonly flush: (runId: string) => Effect.Effect<void>
  /** The text of the run's newest stored progress report. */
  readonly latestProgress: (runId: string) => Effect.Effect<Option.Option<string>, StoreFailure>
}

export class Notifications extends Context.Tag("pi-workflow-turns/Notifications")<
  Notifications,
  NotificationsService
>() {}

export const make = (config: NotificationsConfig = {}) =>
  Effect.gen(function* () {
    const store = yield* NotificationStore
    const runs = yield* RunStore
    const db = yield* Database
    const notifier = yield* Notifier
    const minIntervalMs = config.minIntervalMs ?? 1_000
    const held = yield* Ref.make<ReadonlyMap<string, Report>>(new Map())
    const timers = yield* FiberMap.make<string>()
    const lock = yield* Effect.makeSemaphore(1)

    /** Showing is best effort after the write: a failure leaves the row for the next pass. */
    const show = notifier.deliverPending.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("notification delivery failed", cause)),
      Effect.asVoid
    )

    const liveRun = (runId: string) =>
      Effect.flatMap(runs.get(runId), (found) => {
        if (Option.isNone(found))
          return Effect.fail(new ProgressRejected({ reason: `run ${runId} does not exist` }))
        if (isTerminal(found.value.state)) {
          return Effect.fail(
            new ProgressRejected({
              reason: `run ${runId} has ended (${found.value.state}); progress is closed`
            })
          )
        }
        return Effect.succeed(found.value)
      })

    /** Check the run is still live and store the report, in one transaction. */
    const write = (report: Report) =>
      db
        .immediate(
          Effect.gen(function* () {
            const run = yield* liveRun(report.runId)
            yield* store.insert({
              notificationId: `progress-${randomUUID()}`,
              runId: report.runId,
              targetSessionId: run.targetSessionId,
              payload: {
                schema: NOTIFICATION_SCHEMA,
                kind: "progress",
                workflowName: run.workflowName,
                text: report.text,
                nodeId: report.nodeId,
                attemptId: report.attemptId
              }
            })
          })
        )
        .pipe(
          Effect.catchTags({
            SqlError: (error) => Effect.fail(storeFailure("progress")(error)),
            InvalidInput: (error) => Effect.fail(new ProgressRejected({ reason: error.message }))
          })
        )

    const takeHeld = (runId: string) =>
      Ref.modify(held, (map): [Report | undefined, ReadonlyMap<string, Report>] => {
        const report = map.get(runId)
        if (report === undefined) return [undefined, map]
        const next = new Map(map)
        next.delete(runId)
        return [report, next]
      })

    /** Store the run's held report, if any; a run that ended meanwhile drops it. */
    const writeHeld = (runId: string) =>
      lock
        .withPermits(1)(
          Effect.flatMap(takeHeld(runId), (report) =>
            report === undefined ? Effect.succeed(false) : Effect.as(write(report), true)
          )
        )
        .pipe(
          Effect.uninterruptible,
          Effect.flatMap((stored) => (stored ? show : Effect.void)),
          Effect.catchAll((error) =>
            Effect.logWarning(`workflow run ${runId}: held progress report dropped: ${error.message}`)
          )
        )

    const progress: NotificationsService["progress"] = (report) =>
      Effect.gen(function* () {
        const problem = progressProblem(report.text)
        if (problem !== null) return yield* new ProgressRejected({ reason: problem })
        const status = yield* lock.withPermits(1)(
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            if ((yield* Ref.get(held)).has(report.runId)) {
              yield* liveRun(report.runId)
              yield* Ref.update(held, (map) => new Map(map).set(report.runId, report))
              return "coalesced" as const
            }
            const last = yield* store.latest(report.runId, "progress")
            const wait = Option.match(last, {
              onNone: () => 0,
              onSome: (n) => Date.parse(n.createdAt) + minIntervalMs - now
            })
            if (wait <= 0) {
              yield* write(report)
              return "stored" as const
            }
            yield* liveRun(report.runId)
            yield* Ref.update(held, (map) => new Map(map).set(report.runId, report))
            yield* FiberMap.run(
              timers,
              report.runId,
              Effect.zipRight(Effect.sleep(wait), writeHeld(report.runId))
            )
            return "coalesced" as const
          })
        )
        if (status === "stored") yield* show
        return { runId: report.runId, status }
      })

    const progressForRequest: NotificationsService["progressForRequest"] = (input) =>
      Effect.gen(function* () {
        const problem = progressProblem(input.text)
        if (problem !== null) return yield* new ProgressRejected({ reason: problem })
        const request = yield* runs.request(input.requestId)
        if (Option.isNone(request)) {
          return yield* new ProgressRejected({ reason: `request ${input.requestId} does not exist` })
        }
        const run = yield* runs.get(request.value.runId)
        if (Option.isNone(run)) {
          return yield* new ProgressRejected({ reason: `run ${request.value.runId} does not exist` })
        }
        const foreign = foreignRun(run.value, input.sessionId, "progress")
        if (foreign !== null) return yield* foreign
        if (isTerminal(run.value.state)) {
          return yield* new ProgressRejected({
            reason: `run ${run.value.runId} has ended (${run.value.state}); progress is closed`
          })
        }
        if (request.value.state !== "open") {
          return yield* new ProgressRejected({
            reason: `request ${input.requestId} is no longer open (${request.value.closedReason ?? request.value.state})`
          })
        }
        return yield* progress({
          runId: run.value.runId,
          text: input.text,
          nodeId: request.value.nodeId,
          attemptId: request.value.attemptId
        })
      })

    const flush: NotificationsService["flush"] = (runId) =>
      Effect.zipRight(FiberMap.remove(timers, runId), writeHeld(runId))

    const latestProgress: NotificationsService["latestProgress"] = (runId) =>
      Effect.map(
        store.latest(runId, "progress"),
        Option.flatMap((n) => (n.payload.kind === "progress" ? Option.some(n.payload.text) : Option.none()))
      )

    return Notifications.of({ progress, progressForRequest, flush, latestProgress })
  })

/** The service, and the engine's StepProgress port over it. */
export const layer = (
  config: NotificationsConfig = {}
): Layer.Layer<Notifications | StepProgress, never, NotificationStore | RunStore | Database | Notifier> =>
  Layer.scopedContext(
    Effect.map(make(config), (service) =>
      Context.make(Notifications, service).pipe(
        Context.add(StepProgress, {
          report: (report) => Effect.asVoid(service.progress(report))
        })
      )
    )
  )
