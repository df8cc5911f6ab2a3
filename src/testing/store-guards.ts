/**
 * Store guards: each store's service with a `Guard` run around every call (a fault, a
 * scheduling point, a death), and `layerGated`, which wraps every store of the controller
 * database that way. The fault scripts of `store-faults.ts` and the simulations build on them.
 */
import { Context, Effect, Layer } from "effect"
import { Database } from "../store/database.ts"
import { LaunchStore } from "../store/launch-store.ts"
import { NotificationStore, type NotificationStoreService } from "../store/notification-store.ts"
import { RunStore, type RunStoreService } from "../store/run-store.ts"
import { StepReminderStore, type StepReminderStoreService } from "../store/step-reminder-store.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../store/turn-intent-store.ts"

/** What runs around one call of `operation`; it may add a `StoreFailure`, which every operation declares. */
export type Guard<Op extends string> = (
  operation: Op
) => <A, E>(call: Effect.Effect<A, E>) => Effect.Effect<A, E | StoreFailure>

export const guardTurnIntentStore = (
  store: TurnIntentStoreService,
  guard: Guard<keyof TurnIntentStoreService>
): TurnIntentStoreService => ({
  ensure: (input) => guard("ensure")(store.ensure(input)),
  get: (id) => guard("get")(store.get(id)),
  claimForRun: (input) => guard("claimForRun")(store.claimForRun(input)),
  claimEligibleForSession: (input) => guard("claimEligibleForSession")(store.claimEligibleForSession(input)),
  makeEligible: (input) => guard("makeEligible")(store.makeEligible(input)),
  resolve: (input) => guard("resolve")(store.resolve(input)),
  renew: (input) => guard("renew")(store.renew(input)),
  release: (input) => guard("release")(store.release(input)),
  list: (query) => guard("list")(store.list(query))
})

export const guardRunStore = (
  store: RunStoreService,
  guard: Guard<keyof RunStoreService>
): RunStoreService => ({
  reserve: (run) => guard("reserve")(store.reserve(run)),
  nextQueued: (sessionId) => guard("nextQueued")(store.nextQueued(sessionId)),
  claim: (input) => guard("claim")(store.claim(input)),
  adopt: (input) => guard("adopt")(store.adopt(input)),
  renew: (fence, leaseMs) => guard("renew")(store.renew(fence, leaseMs)),
  control: (fence) => guard("control")(store.control(fence)),
  startStep: (fence, input) => guard("startStep")(store.startStep(fence, input)),
  recordLimit: (fence, input) => guard("recordLimit")(store.recordLimit(fence, input)),
  openRequest: (fence, input) => guard("openRequest")(store.openRequest(fence, input)),
  recordInterruption: (fence, p) => guard("recordInterruption")(store.recordInterruption(fence, p)),
  recordHandoff: (runId, p, options) => guard("recordHandoff")(store.recordHandoff(runId, p, options)),
  clearInterruption: (fence) => guard("clearInterruption")(store.clearInterruption(fence)),
  submit: (fence, input) => guard("submit")(store.submit(fence, input)),
  settle: (fence, settlement) => guard("settle")(store.settle(fence, settlement)),
  advance: (fence, settlement) => guard("advance")(store.advance(fence, settlement)),
  requestPause: (runId) => guard("requestPause")(store.requestPause(runId)),
  withdrawPause: (runId) => guard("withdrawPause")(store.withdrawPause(runId)),
  cancel: (runId, by) => guard("cancel")(store.cancel(runId, by)),
  recordEvent: (runId, event) => guard("recordEvent")(store.recordEvent(runId, event)),
  events: (runId) => guard("events")(store.events(runId)),
  get: (runId) => guard("get")(store.get(runId)),
  wait: (fence, input) => guard("wait")(store.wait(fence, input)),
  answerWait: (input) => guard("answerWait")(store.answerWait(input)),
  expireWait: (input) => guard("expireWait")(store.expireWait(input)),
  waitOf: (requestId) => guard("waitOf")(store.waitOf(requestId)),
  waits: (query) => guard("waits")(store.waits(query)),
  listBySession: (sessionId, limit) => guard("listBySession")(store.listBySession(sessionId, limit)),
  list: (query) => guard("list")(store.list(query)),
  steps: (runId) => guard("steps")(store.steps(runId)),
  request: (requestId) => guard("request")(store.request(requestId))
})

export const guardNotificationStore = (
  store: NotificationStoreService,
  guard: Guard<keyof NotificationStoreService>
): NotificationStoreService => ({
  insert: (input) => guard("insert")(store.insert(input)),
  latest: (runId, kind) => guard("latest")(store.latest(runId, kind)),
  takePending: (input) => guard("takePending")(store.takePending(input)),
  list: (input) => guard("list")(store.list(input))
})

export const guardStepReminderStore = (
  store: StepReminderStoreService,
  guard: Guard<keyof StepReminderStoreService>
): StepReminderStoreService => ({
  take: (input) => guard("take")(store.take(input)),
  forAttempt: (attemptId) => guard("forAttempt")(store.forAttempt(attemptId)),
  countsForRun: (runId) => guard("countsForRun")(store.countsForRun(runId))
})

/** The stores of the controller database, as the application takes them (`App.StoreServices`). */
export type GatedStores =
  | TurnIntentStore
  | RunStore
  | NotificationStore
  | LaunchStore
  | StepReminderStore
  | Database

/**
 * Every call of the turn-intent, run and notification stores first runs `gate(operation)`: a
 * scheduling point, a fault, a death. Launch rows are written inside the run store's
 * transaction, so the launch store shares the run store's gate and passes through, with the
 * `Database`.
 */
export const layerGated = (
  gate: (operation: string) => Effect.Effect<void, StoreFailure>
): Layer.Layer<GatedStores, never, GatedStores> => {
  const guard =
    (operation: string) =>
    <A, E>(call: Effect.Effect<A, E>): Effect.Effect<A, E | StoreFailure> =>
      Effect.zipRight(gate(operation), call)
  return Layer.effectContext(
    Effect.gen(function* () {
      return Context.make(TurnIntentStore, guardTurnIntentStore(yield* TurnIntentStore, guard)).pipe(
        Context.add(RunStore, guardRunStore(yield* RunStore, guard)),
        Context.add(NotificationStore, guardNotificationStore(yield* NotificationStore, guard)),
        Context.add(LaunchStore, yield* LaunchStore),
        Context.add(StepReminderStore, guardStepReminderStore(yield* StepReminderStore, guard)),
        Context.add(Database, yield* Database)
      )
    })
  )
}
