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
 * The world records what the invariants need (records.ts). Pi's side lives in sim-pi.ts, what
 * each step does in world-steps.ts.
 */
import type { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import { layerSyncOnEligible } from "../../src/app/layers.ts"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import * as CoordinatorLive from "../../src/delivery/coordinator-live.ts"
import { AbortBookkeeping, make as makeBookkeeping } from "../../src/interruption/abort-bookkeeping.ts"
import * as Interruptions from "../../src/interruption/interruptions.ts"
import { SourceEvents } from "../../src/interruption/source-events.ts"
import { makeFake, type PiSessionFakeControl } from "../../src/session/pi-session-fake.ts"
import { PiSession } from "../../src/session/pi-session.ts"
import type { Database } from "../../src/store/database.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../../src/store/turn-intent-store-sql.ts"
import { layer as StoreFaultsLayer, StoreFaults } from "../../src/testing/store-faults.ts"
import { withTimings } from "../support/timing.ts"
import { fork, type Mutation, type Proc } from "./proc.ts"
import type { NaturalLog, PublishLog, SendLog } from "./records.ts"
import { type ProcId, type Schedule, SESSION, type Step } from "./schedule.ts"
import type { SimClock } from "./sim-clock.ts"
import { makeSimPi } from "./sim-pi.ts"
import { makeExecute, type RunState } from "./world-steps.ts"

export const LEASE_MS = 30_000
export const CLAIM_RETRY_MS = 500
export const PERSIST_TIMEOUT_MS = 250
export const SYNC_INTERVAL_MS = 10_000

/** One database connection per runner slot (opened once per batch, see runner.ts). */
export type Connection = Context.Context<Database | SqlClient.SqlClient>

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
    const liveProcs = () => procs.filter((p): p is Proc => p !== null)

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

    const pi = makeSimPi({
      session: fakeSession,
      fake,
      clock,
      mutation,
      sends,
      publishes,
      point,
      around,
      currentStep: () => currentStep,
      liveProcs,
      worldScope
    })

    const startProc = (slot: ProcId) =>
      Effect.gen(function* () {
        const generation = ++generations[slot]
        const scope = yield* Scope.make()
        // The slot's connection outlives its processes: a crash leaves no transaction open (every
        // turn-intent statement is atomic), so a new process on a new connection behaves the same.
        const stores = yield* Layer.build(
          StoreFaultsLayer.pipe(
            Layer.provide(TurnIntentStoreSql.layer),
            Layer.provide(Layer.succeedContext(connections[slot]))
          )
        ).pipe(Scope.extend(scope))
        const store = interleaved(Context.get(stores, TurnIntentStore))
        // The core's parts over this process's store, sharing the session's abort bookkeeping.
        const core = yield* Layer.build(
          Layer.merge(
            CoordinatorLive.layerCoordinator({ token: `p${slot}.${generation}` }),
            Interruptions.layer({ terminal: { attempts: 3, retryBaseMs: 50, attemptTimeoutMs: 500 } })
          ).pipe(
            Layer.provide(
              withTimings({
                deliveryLease: Duration.millis(LEASE_MS),
                claimRetry: Duration.millis(CLAIM_RETRY_MS),
                syncInterval: schedule.periodic ? Duration.millis(SYNC_INTERVAL_MS) : null,
                abortPersistTimeout: Duration.millis(PERSIST_TIMEOUT_MS)
              })
            ),
            Layer.provide(Layer.succeed(TurnIntentStore, store)),
            Layer.provide(Layer.succeed(PiSession, pi.sessionOf(slot, generation))),
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
          layerSyncOnEligible.pipe(Layer.provide(Layer.succeedContext(core)))
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
        pi.dropPendingOf(slot, proc.generation)
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

    const execute = makeExecute({
      schedule,
      clock,
      session: fakeSession,
      fake,
      pi,
      procs,
      runs,
      sends,
      publishes,
      naturals,
      quietProblems,
      currentStep: () => currentStep,
      startProc,
      killProc,
      restartAll
    })

    return {
      fake: fake satisfies PiSessionFakeControl,
      lifecycle: fakeSession.lifecycle,
      sends,
      publishes,
      naturals,
      quietProblems,
      lostWithProcess: pi.lostWithProcess,
      procs,
      startProc,
      execute,
      settle: pi.settle,
      restartAll,
      writesPending: pi.writesPending,
      clearSendFailures: pi.clearSendFailures,
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
      liveProcs
    }
  })

export type World = Effect.Effect.Success<ReturnType<typeof makeWorld>>
