/**
 * Pi's side of the simulated world, over the one fake session every runner acts on. Pi defers a
 * message sent while its `agent_settled` handlers run until they have all returned, and a crash
 * before that loses the message; a user prompt that arrives in that window starts its turn
 * after them. Each process sees the session through `sessionOf`, which logs every send with the
 * lifecycle at that moment and applies the Pi-side mutations.
 */
import { Deferred, Effect, Fiber, type Scope } from "effect"
import type { CoordinatorService } from "../../src/delivery/coordinator.ts"
import { DEFERRED_TURN_TYPE } from "../../src/domain/message-types.ts"
import type { PiSessionFakeControl } from "../../src/session/pi-session-fake.ts"
import {
  type CustomMessage,
  type DeliveryOptions,
  type PiSessionService,
  SendFailed
} from "../../src/session/pi-session.ts"
import type { Mutation } from "./proc.ts"
import type { LostMessage, PublishLog, SendLog } from "./records.ts"
import type { ProcId } from "./schedule.ts"
import type { SimClock } from "./sim-clock.ts"

export interface SimPiOptions {
  readonly session: PiSessionService
  readonly fake: PiSessionFakeControl
  readonly clock: SimClock
  readonly mutation: Mutation | null
  readonly sends: SendLog[]
  readonly publishes: readonly PublishLog[]
  /** A scheduling point on both sides (see world.ts). */
  readonly point: Effect.Effect<void>
  readonly around: <A, E>(call: Effect.Effect<A, E>) => Effect.Effect<A, E>
  readonly currentStep: () => number
  /** The processes alive now; each runs its settle handler. */
  readonly liveProcs: () => ReadonlyArray<{
    readonly coordinator: CoordinatorService
    readonly scope: Scope.Scope
  }>
  /** Outlives every process: Pi writes deferred sends after the handlers, whoever crashed. */
  readonly worldScope: Scope.Scope
}

/** A send waiting for the settle handlers to return, tagged with the process that sent it. */
interface Pending {
  readonly slot: ProcId
  readonly generation: number
  readonly message: CustomMessage
  readonly options: DeliveryOptions
  readonly lifecycle: { readonly shuttingDown: boolean; readonly userHold: boolean }
  /** The session's phase when the sender decided (what its checks saw). */
  readonly phase: string
  readonly step: number
}

export const makeSimPi = (options: SimPiOptions) => {
  const { session: fakeSession, fake, clock, mutation, sends, publishes, point, around } = options
  /** Messages the coordinator sent that died with their process before Pi wrote them. */
  const lostWithProcess: LostMessage[] = []
  let emitting = 0
  /** Natural deliveries waiting for the settle handlers to return (rule 4, `settleDone`). */
  let settleWaiters: Array<Deferred.Deferred<void>> = []
  let userTurnDeferred = false
  let deferred: Pending[] = []
  let failuresLeft = 0

  /** The message reaches the session (or, under `dropFallback`, is silently dropped). */
  const write = (entry: Pending) =>
    Effect.gen(function* () {
      const { message, phase } = entry
      const dropped = mutation === "dropFallback" && message.customType === DEFERRED_TURN_TYPE
      if (!dropped) yield* Effect.ignore(fakeSession.send(message, entry.options))
      const record = (yield* fake.sent).at(-1)
      const id = message.details.turnIntentId
      sends.push({
        proc: entry.slot,
        customType: message.customType,
        content: message.content,
        turnIntentId: typeof id === "string" ? id : null,
        shuttingDown: entry.lifecycle.shuttingDown,
        userHold: entry.lifecycle.userHold,
        phase,
        delivered: dropped || record?.entryId !== null,
        step: entry.step
      })
    })

  /** The session as one process sees it: sends are logged with the lifecycle at that moment. */
  const sessionOf = (slot: ProcId, generation: number): PiSessionService => {
    const deliver = (message: CustomMessage, delivery: DeliveryOptions) =>
      Effect.gen(function* () {
        // No scheduling point before the send: Pi's sendMessage is synchronous, so nothing can
        // happen between the coordinator's last check and the message reaching the session.
        if (failuresLeft > 0) {
          failuresLeft--
          return yield* new SendFailed({ message: "scripted send failure" })
        }
        const entry: Pending = {
          slot,
          generation,
          message,
          options: delivery,
          lifecycle: yield* fakeSession.lifecycle,
          phase: yield* fake.phase,
          step: options.currentStep()
        }
        if (emitting > 0) deferred.push(entry)
        else yield* write(entry)
        yield* point
      })
    return {
      ...fakeSession,
      // Every process's handler runs in one settle (`settle` below): ours runs while any does.
      settling: Effect.sync(() => emitting > 0),
      settleDone: Effect.suspend(() => {
        if (emitting === 0) return Effect.void
        const waiter = Effect.runSync(Deferred.make<void>())
        settleWaiters.push(waiter)
        return Deferred.await(waiter)
      }),
      branch: around(fakeSession.branch),
      lifecycle:
        mutation === "ignoreLifecycle"
          ? Effect.succeed({ shuttingDown: false, userHold: false })
          : fakeSession.lifecycle,
      send: (message, delivery) =>
        mutation === "doubleSend" && typeof message.details.turnIntentId === "string"
          ? Effect.zipRight(deliver(message, delivery), deliver(message, delivery))
          : deliver(message, delivery),
      abort: Effect.gen(function* () {
        const now = clock.now()
        for (const log of publishes) {
          if (log.proc === slot && log.abortedAt === null && log.event._tag === "ActiveTurnInterrupted") {
            log.abortedAt = now
          }
        }
        yield* fakeSession.abort
      })
    }
  }

  /** `agent_settled`: waiters wake, every process's handler runs; Pi writes deferred sends after. */
  const settle = Effect.gen(function* () {
    // Pi emits agent_settled only after a turn, and no turn starts while handlers run.
    if (emitting > 0) return
    // The handlers are marked before the idle waiters wake (the entry marks its handler first).
    emitting++
    yield* fake.settle()
    yield* point
    const handlers: Array<Fiber.RuntimeFiber<void>> = []
    for (const proc of options.liveProcs()) {
      handlers.push(yield* Effect.forkIn(Effect.ignore(proc.coordinator.onSettled), proc.scope))
    }
    yield* Effect.forkIn(
      Effect.gen(function* () {
        for (const handler of handlers) yield* Fiber.await(handler)
        emitting--
        if (emitting > 0) return
        const writing = deferred
        deferred = []
        for (const entry of writing) yield* write(entry)
        const waiting = settleWaiters
        settleWaiters = []
        for (const waiter of waiting) yield* Deferred.succeed(waiter, undefined)
        if (userTurnDeferred) {
          userTurnDeferred = false
          yield* fake.startTurn
        }
      }),
      options.worldScope
    )
  })

  return {
    lostWithProcess,
    sessionOf,
    settle,
    /** Settle handlers are running: no turn can start (Pi defers it), so none can be stopped. */
    emitting: () => emitting > 0,
    /** A prompt that arrives while settle handlers run starts its turn after them. */
    userTurn: Effect.suspend(() => {
      if (emitting > 0) {
        userTurnDeferred = true
        return Effect.void
      }
      return fake.startTurn
    }),
    /** Messages Pi had not written yet die with the process. */
    dropPendingOf: (slot: ProcId, generation: number) => {
      const mine = (entry: Pending) => entry.slot === slot && entry.generation === generation
      for (const entry of deferred) {
        if (!mine(entry)) continue
        const id = entry.message.details.turnIntentId
        lostWithProcess.push({
          turnIntentId: typeof id === "string" ? id : null,
          content: entry.message.content
        })
      }
      deferred = deferred.filter((entry) => !mine(entry))
    },
    /** Pi is still inside settle handlers, or has messages it has not written yet. */
    writesPending: () => emitting > 0 || deferred.length > 0,
    failSends: (count: number) => {
      failuresLeft += count
    },
    clearSendFailures: () => {
      failuresLeft = 0
    }
  }
}

export type SimPi = ReturnType<typeof makeSimPi>
