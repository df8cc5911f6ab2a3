/**
 * The simulated world one schedule runs in: a real SQLite file, the fake Pi session (one
 * session; its branch survives restarts like a session file), and two runner slots. Each runner
 * has its own store connection (wrapped with scripted faults), its own coordinator, publisher and
 * claimant tokens, and its own scope, so a crash interrupts exactly its fibers wherever they are.
 * Both runners act on the one session, so they share what Pi itself knows about it: its phase
 * and the system aborts in flight (one `AbortBookkeeping`). A full restart (a new Pi process)
 * starts with an idle session and empty bookkeeping.
 *
 * Every store call is a scheduling point on both sides (runners are concurrent processes as far
 * as the database is concerned); a send is not preceded by one (Pi's `sendMessage` is
 * synchronous) but followed by one, so a crash can fall between a send and its resolution.
 * The world records what the invariants need: every send with the lifecycle at that moment,
 * every publish and its outcome, every abort and when it happened.
 */
import { Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { Coordinator, type CoordinatorService, type NaturalMessage } from "../../src/delivery/coordinator.ts"
import * as SyncOnEligible from "../../src/app/sync-on-eligible.ts"
import * as CoordinatorLive from "../../src/delivery/coordinator-live.ts"
import { DEFERRED_TURN_TYPE, FALLBACK_DELIVERY } from "../../src/delivery/fallback-message.ts"
import { decide } from "../../src/domain/event-policy.ts"
import { intentRequest } from "../../src/domain/intent-request.ts"
import type { Provenance, RunRef, SourceEvent } from "../../src/domain/source-event.ts"
import { AbortBookkeeping, make as makeBookkeeping } from "../../src/interruption/abort-bookkeeping.ts"
import { identify } from "../../src/interruption/intent-ids.ts"
import * as Interruptions from "../../src/interruption/interruptions.ts"
import type { PublishResult } from "../../src/interruption/source-events.ts"
import { SourceEvents, type SourceEventsService } from "../../src/interruption/source-events.ts"
import { makeFake, type PiSessionFakeControl } from "../../src/session/pi-session-fake.ts"
import {
  type CustomMessage,
  type DeliveryOptions,
  PiSession,
  type PiSessionService,
  SendFailed
} from "../../src/session/pi-session.ts"
import type { SqlClient } from "@effect/sql"
import type { Database } from "../../src/store/database.ts"
import * as TurnIntentStoreSqlite from "../../src/store/turn-intent-store-sqlite.ts"
import {
  type Fault,
  layer as StoreFaultsLayer,
  StoreFaults,
  type StoreFaultsControl
} from "../../src/testing/store-faults.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"
import { type ProcId, provenanceOf, type Schedule, SESSION, type SimFault, type Step } from "./schedule.ts"
import type { SimClock } from "./sim-clock.ts"

export const LEASE_MS = 30_000
export const CLAIM_RETRY_MS = 500
export const PERSIST_TIMEOUT_MS = 250
export const SYNC_INTERVAL_MS = 10_000

export interface SendLog {
  readonly proc: ProcId
  readonly customType: string
  readonly content: string
  readonly turnIntentId: string | null
  readonly shuttingDown: boolean
  readonly userHold: boolean
  readonly phase: string
  /** False when the fake lost it (sent into an aborting turn). */
  readonly delivered: boolean
  readonly step: number
}

export interface PublishLog {
  readonly proc: ProcId
  readonly generation: number
  readonly step: number
  readonly event: SourceEvent
  /** The intent the policy asks for (null: none), and whether it should end up eligible. */
  readonly expectedIntent: string | null
  readonly eligible: boolean
  readonly startedAt: number
  result: PublishResult | null
  /** The publish fiber was stopped by a crash of its process. */
  interrupted: boolean
  abortedAt: number | null
}

export interface NaturalLog {
  readonly proc: ProcId
  readonly generation: number
  readonly step: number
  readonly runId: string
  readonly content: string
  outcome: "pending" | "sent" | "failed" | "interrupted"
  startedUnderHold: boolean
}

interface Proc {
  readonly slot: ProcId
  readonly generation: number
  readonly scope: Scope.CloseableScope
  readonly coordinator: CoordinatorService
  readonly events: SourceEventsService
  readonly faults: StoreFaultsControl
  readonly store: TurnIntentStoreService
}

interface RunState {
  interruptions: number
  pending: Provenance | null
  lastEligible: SourceEvent | null
}

const toFault = (fault: SimFault): Fault =>
  fault._tag === "Hang" ? { _tag: "Hang", ms: fault.ms } : fault._tag === "Throw" ? { _tag: "Throw" } : fault

/** One database connection per runner slot (opened once per batch, see runner.ts). */
export type Connection = Context.Context<Database | SqlClient.SqlClient>

/**
 * Deliberate bugs, to prove the invariants can fail: send every resolving message twice; let
 * the core see no shutdown or hold; report fallback sends as done without delivering them;
 * let the core forget the system aborts in flight.
 */
export type Mutation = "doubleSend" | "ignoreLifecycle" | "dropFallback" | "forgetAborts"

export const makeWorld = (
  schedule: Schedule,
  connections: readonly [Connection, Connection],
  clock: SimClock,
  mutation: Mutation | null = null
) =>
  Effect.gen(function* () {
    const worldScope = yield* Effect.scope
    const { session: fakeSession, control: fake } = yield* makeFake({ sessionId: SESSION })
    // One Pi session: whichever runner aborted its turn, every runner must see the abort in flight.
    const bookkeeping = yield* makeBookkeeping
    const procs: [Proc | null, Proc | null] = [null, null]
    const generations: [number, number] = [0, 0]
    const sends: SendLog[] = []
    const publishes: PublishLog[] = []
    const naturals: NaturalLog[] = []
    const quietProblems: string[] = []
    const runs: RunState[] = schedule.runs.map(() => ({
      interruptions: 0,
      pending: null,
      lastEligible: null
    }))
    let currentStep = -1

    const point = Effect.suspend(() => {
      clock.touch()
      return Effect.yieldNow()
    })
    const around = <A, E>(call: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      point.pipe(
        Effect.zipRight(call),
        Effect.tap(() => point)
      )

    /** Every store call is a scheduling point on both sides. */
    const interleaved = (store: TurnIntentStoreService): TurnIntentStoreService => ({
      ensure: (input) => around(store.ensure(input)),
      get: (id) => around(store.get(id)),
      claimForRun: (input) => around(store.claimForRun(input)),
      claimEligibleForSession: (input) => around(store.claimEligibleForSession(input)),
      makeEligible: (input) => around(store.makeEligible(input)),
      resolve: (input) => around(store.resolve(input)),
      renew: (input) => around(store.renew(input)),
      release: (input) => around(store.release(input)),
      list: (query) => around(store.list(query))
    })

    /**
     * Pi defers a message sent while its `agent_settled` handlers run until they have all
     * returned; a crash before that loses the message. Sends in that window wait here, tagged
     * with the process that sent them.
     */
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
    /** Messages the coordinator sent that died with their process before Pi wrote them. */
    const lostWithProcess: Array<{ readonly turnIntentId: string | null; readonly content: string }> = []
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
      const deliver = (message: CustomMessage, options: DeliveryOptions) =>
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
            options,
            lifecycle: yield* fakeSession.lifecycle,
            phase: yield* fake.phase,
            step: currentStep
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
        send: (message, options) =>
          mutation === "doubleSend" && typeof message.details.turnIntentId === "string"
            ? Effect.zipRight(deliver(message, options), deliver(message, options))
            : deliver(message, options),
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

    const startProc = (slot: ProcId) =>
      Effect.gen(function* () {
        const generation = ++generations[slot]
        const scope = yield* Scope.make()
        // The slot's connection outlives its processes: a crash leaves no transaction open (every
        // turn-intent statement is atomic), so a new process on a new connection behaves the same.
        const stores = yield* Layer.build(
          StoreFaultsLayer.pipe(
            Layer.provide(TurnIntentStoreSqlite.layer),
            Layer.provide(Layer.succeedContext(connections[slot]))
          )
        ).pipe(Scope.extend(scope))
        const store = interleaved(Context.get(stores, TurnIntentStore))
        // The core's parts over this process's store, sharing the session's abort bookkeeping.
        const core = yield* Layer.build(
          Layer.merge(
            CoordinatorLive.layer({
              token: `p${slot}.${generation}`,
              leaseMs: LEASE_MS,
              claimRetryMs: CLAIM_RETRY_MS,
              syncIntervalMs: schedule.periodic ? SYNC_INTERVAL_MS : null
            }),
            Interruptions.layer({
              persistTimeoutMs: PERSIST_TIMEOUT_MS,
              terminal: { attempts: 3, retryBaseMs: 50, attemptTimeoutMs: 500 }
            })
          ).pipe(
            Layer.provide(Layer.succeed(TurnIntentStore, store)),
            Layer.provide(Layer.succeed(PiSession, sessionOf(slot, generation))),
            Layer.provide(
              Layer.succeed(
                AbortBookkeeping,
                mutation === "forgetAborts" ? { ...bookkeeping, inFlight: Effect.succeed([]) } : bookkeeping
              )
            )
          )
        ).pipe(Scope.extend(scope))
        // As in the app (src/app/layers.ts): an eligible event starts a fallback pass at once.
        const withPass = yield* Layer.build(
          SyncOnEligible.layer.pipe(Layer.provide(Layer.succeedContext(core)))
        ).pipe(Scope.extend(scope))
        const proc: Proc = {
          slot,
          generation,
          scope,
          coordinator: Context.get(core, Coordinator),
          events: Context.get(withPass, SourceEvents),
          faults: Context.get(stores, StoreFaults),
          store
        }
        procs[slot] = proc
        return proc
      })

    /** SIGKILL: the process's fibers stop wherever they are; the database and the session stay. */
    const killProc = (slot: ProcId) =>
      Effect.gen(function* () {
        const proc = procs[slot]
        procs[slot] = null
        if (proc === null) return
        yield* Scope.close(proc.scope, Exit.void)
        // A fiber interrupted before it ever ran has no exit handler of its own.
        const mine = (log: { readonly proc: ProcId; readonly generation: number }) =>
          log.proc === slot && log.generation === proc.generation
        for (const log of naturals) if (mine(log) && log.outcome === "pending") log.outcome = "interrupted"
        for (const log of publishes) if (mine(log) && log.result === null) log.interrupted = true
        // Messages Pi had not written yet die with the process.
        for (const entry of deferred) {
          if (!mine({ proc: entry.slot, generation: entry.generation })) continue
          const id = entry.message.details.turnIntentId
          lostWithProcess.push({
            turnIntentId: typeof id === "string" ? id : null,
            content: entry.message.content
          })
        }
        deferred = deferred.filter((entry) => !mine({ proc: entry.slot, generation: entry.generation }))
      })

    const fork = <A, E>(proc: Proc, effect: Effect.Effect<A, E>) =>
      Effect.asVoid(Effect.forkIn(Effect.ignore(effect), proc.scope))

    const liveProc = (slot: ProcId): Proc | null => procs[slot] ?? procs[slot === 0 ? 1 : 0] ?? null

    const runRef = (run: number): RunRef => {
      const spec = schedule.runs[run]
      if (spec === undefined) throw new Error(`no run ${run}`)
      return {
        runId: spec.runId,
        workflowRef: "sim-workflow@1",
        workflowName: "sim-workflow",
        targetSessionId: spec.targetSessionId,
        origin: spec.origin
      }
    }

    /** Publish from a process: quiet decisions run inline and are checked on the spot. */
    const publish = (proc: Proc, event: SourceEvent) =>
      Effect.gen(function* () {
        const decision = decide(event)
        const request = intentRequest(event, decision)
        if (request === null) {
          const callsBefore = JSON.stringify(yield* proc.faults.calls)
          const sendsBefore = sends.length
          const result = yield* proc.events.publish(event)
          const callsAfter = JSON.stringify(yield* proc.faults.calls)
          if (result.intentId !== null || result.warning !== null) {
            quietProblems.push(`step ${currentStep}: ${event._tag} returned an intent or a warning`)
          }
          if (callsBefore !== callsAfter)
            quietProblems.push(`step ${currentStep}: ${event._tag} touched the store`)
          if (sends.length !== sendsBefore)
            quietProblems.push(`step ${currentStep}: ${event._tag} sent a message`)
          return
        }
        const identified = yield* Effect.either(identify(request))
        const log: PublishLog = {
          proc: proc.slot,
          generation: proc.generation,
          step: currentStep,
          event,
          expectedIntent: identified._tag === "Right" ? identified.right.intentId : null,
          eligible: request.eligible,
          startedAt: clock.now(),
          result: null,
          interrupted: false,
          abortedAt: null
        }
        publishes.push(log)
        yield* fork(
          proc,
          proc.events.publish(event).pipe(
            Effect.onExit((exit) =>
              Effect.sync(() => {
                if (Exit.isSuccess(exit)) log.result = exit.value
                else log.interrupted = Exit.isInterrupted(exit)
              })
            )
          )
        )
      })

    const natural = (proc: Proc, run: number, kind: NaturalMessage["kind"]) =>
      Effect.gen(function* () {
        const runId = runRef(run).runId
        const content = `${kind} for ${runId} at step ${currentStep} (p${proc.slot}.${proc.generation})`
        const lifecycle = yield* fakeSession.lifecycle
        const log: NaturalLog = {
          proc: proc.slot,
          generation: proc.generation,
          step: currentStep,
          runId,
          content,
          outcome: "pending",
          startedUnderHold: lifecycle.userHold || lifecycle.shuttingDown
        }
        naturals.push(log)
        const message: NaturalMessage = {
          kind,
          runId,
          message: {
            customType: kind === "presentation" ? "pi-workflows-presentation" : "pi-workflows-agent-step",
            content,
            display: true,
            details: { runId }
          },
          options: FALLBACK_DELIVERY
        }
        yield* fork(
          proc,
          proc.coordinator.deliverNatural(message).pipe(
            Effect.onExit((exit) =>
              Effect.sync(() => {
                log.outcome = Exit.isSuccess(exit)
                  ? "sent"
                  : Exit.isInterrupted(exit)
                    ? "interrupted"
                    : "failed"
              })
            )
          )
        )
      })

    /** `agent_settled`: waiters wake, every process's handler runs; Pi writes deferred sends after. */
    const settle = Effect.gen(function* () {
      // Pi emits agent_settled only after a turn, and no turn starts while handlers run.
      if (emitting > 0) return
      // The handlers are marked before the idle waiters wake (the entry marks its handler first).
      emitting++
      yield* fake.settle()
      yield* point
      const handlers: Array<Fiber.RuntimeFiber<void>> = []
      for (const proc of procs) {
        if (proc !== null)
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
        worldScope
      )
    })

    const execute = (step: Step): Effect.Effect<void> =>
      Effect.gen(function* () {
        switch (step._tag) {
          case "Interrupt": {
            const proc = liveProc(step.proc)
            const state = runs[step.run]
            if (proc === null || state === undefined) return
            // While settle handlers run no turn can start (Pi defers it), so none can be stopped.
            if ((yield* fake.phase) === "idle" && emitting === 0) yield* fake.startTurn
            const provenance = {
              ...provenanceOf(step.run, state.interruptions, step.cause),
              cause: step.cause
            }
            state.interruptions++
            state.pending = provenance
            return yield* publish(proc, {
              _tag: "ActiveTurnInterrupted",
              run: runRef(step.run),
              provenance,
              reason: `interrupted (${step.cause})`
            })
          }
          case "Prompt": {
            const proc = liveProc(step.proc)
            const state = runs[step.run]
            if (proc === null || state === undefined) return
            state.pending = null
            return yield* natural(proc, step.run, "workflowPrompt")
          }
          case "Complete": {
            const proc = liveProc(step.proc)
            const state = runs[step.run]
            if (proc === null || state === undefined) return
            state.pending = null
            return yield* natural(proc, step.run, "presentation")
          }
          case "Terminal": {
            const proc = liveProc(step.proc)
            const state = runs[step.run]
            if (proc === null || state === undefined) return
            // A claim-loss abort is not recorded on the run (the new owner does not know it).
            const provenance = state.pending?.cause === "claimLost" ? null : state.pending
            const at = provenance ?? provenanceOf(step.run, state.interruptions, "failed")
            const event: SourceEvent = {
              _tag: "RunTerminal",
              run: runRef(step.run),
              state: step.state,
              nodeId: at.nodeId,
              attemptId: at.attemptId,
              reason: `run ${step.state}`,
              provenance,
              interruption: state.interruptions
            }
            state.lastEligible = event
            return yield* publish(proc, event)
          }
          case "Handoff": {
            const proc = liveProc(step.proc)
            const state = runs[step.run]
            if (proc === null || state === undefined || state.pending === null) return
            const event: SourceEvent = {
              _tag: "HandoffEnded",
              run: runRef(step.run),
              provenance: state.pending,
              observedState: "failed",
              reason: "no runner continued the run"
            }
            state.lastEligible = event
            return yield* publish(proc, event)
          }
          case "LaunchFailed": {
            const proc = liveProc(step.proc)
            const state = runs[step.run]
            if (proc === null || state === undefined) return
            const event: SourceEvent = {
              _tag: "LaunchFailed",
              run: runRef(step.run),
              reason: "queue row failed"
            }
            state.lastEligible = event
            return yield* publish(proc, event)
          }
          case "Quiet": {
            const proc = liveProc(step.proc)
            if (proc === null) return
            return yield* publish(proc, { _tag: "Quiet", run: runRef(step.run), kind: step.kind })
          }
          case "Republish": {
            const proc = liveProc(step.proc)
            const event = runs[step.run]?.lastEligible
            if (proc === null || event === null || event === undefined) return
            return yield* publish(proc, event)
          }
          case "UserTurn":
            // A prompt that arrives while settle handlers run starts its turn after them.
            if (emitting > 0) userTurnDeferred = true
            else yield* fake.startTurn
            return
          case "Settle":
            return yield* settle
          case "Periodic": {
            const proc = liveProc(step.proc)
            if (proc !== null) yield* fork(proc, proc.coordinator.syncFallbacks("periodic"))
            return
          }
          case "SendFailures":
            failuresLeft += step.count
            return
          case "StoreFault": {
            const proc = procs[step.proc]
            if (proc !== null)
              yield* proc.faults.inject(step.operation, toFault(step.fault), { times: step.times })
            return
          }
          case "ClearFaults": {
            const proc = procs[step.proc]
            if (proc !== null) yield* proc.faults.clear()
            return
          }
          case "Clock":
            return yield* clock.advance(step.ms)
          case "Restart": {
            yield* killProc(step.proc)
            const proc = yield* startProc(step.proc)
            return yield* fork(proc, proc.coordinator.onSessionStart)
          }
          case "Kill":
            return yield* killProc(step.proc)
          case "Hold":
            return yield* fake.setUserHold(step.on)
          case "Shutdown":
            return yield* fake.setShuttingDown(true)
          case "RestartAll":
            return yield* restartAll
        }
      })

    /** A new Pi process for the session: every process restarts, shutdown is over. */
    const restartAll = Effect.gen(function* () {
      const slots = ([0, 1] as const).filter((slot) => procs[slot] !== null)
      for (const slot of slots) yield* killProc(slot)
      // The old process took its turn and its memory with it.
      if ((yield* fake.phase) !== "idle") yield* fake.settle({ aborted: true })
      yield* bookkeeping.clear
      yield* fake.setShuttingDown(false)
      for (const slot of slots.length === 0 ? ([0] as const) : slots) {
        const proc = yield* startProc(slot)
        yield* fork(proc, proc.coordinator.onSessionStart)
      }
    })

    return {
      fake: fake satisfies PiSessionFakeControl,
      lifecycle: fakeSession.lifecycle,
      sends,
      publishes,
      naturals,
      quietProblems,
      lostWithProcess,
      procs,
      startProc,
      execute,
      settle,
      restartAll,
      /** Pi is still inside settle handlers, or has messages it has not written yet. */
      writesPending: () => emitting > 0 || deferred.length > 0,
      clearSendFailures: () => {
        failuresLeft = 0
      },
      /** Steps that are Pi or engine events; they happen when the runners' fibers are blocked. */
      isEvent: (step: Step) =>
        !(
          step._tag === "Restart" ||
          step._tag === "Kill" ||
          step._tag === "StoreFault" ||
          step._tag === "ClearFaults" ||
          step._tag === "Clock"
        ),
      setStep: (index: number) => {
        currentStep = index
      },
      liveProcs: () => procs.filter((p): p is Proc => p !== null)
    }
  })

export type World = Effect.Effect.Success<ReturnType<typeof makeWorld>>
