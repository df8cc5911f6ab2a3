/**
 * One simulated Pi process of the engine simulation: the real application graph
 * (`src/app/layers.ts`'s own `layerWith`) over stores whose every call first passes the
 * process's gate — a scheduling point, the fault the schedule set, or death after a SIGKILL.
 */
import { type Context, type Deferred, Duration, Effect, Layer, type Scope } from "effect"
import * as App from "../../src/app/layers.ts"
import type { CrashPoint, CrashPointsService } from "../../src/delivery/coordinator.ts"
import { StoreFailure } from "../../src/store/store-errors.ts"
import {
  type CustomMessage,
  type DeliveryOptions,
  PiSession,
  type PiSessionService
} from "../../src/session/pi-session.ts"
import * as StoreFaults from "../../src/testing/store-faults.ts"
import type { ProcessClock } from "../sim/sim-clock.ts"
import { withTimings } from "../support/timing.ts"
import type { FaultKind, Proc } from "./schedule.ts"
import { WAIT_WORKFLOWS, WORKFLOWS } from "./workflows.ts"

export const SESSION = "sim-session"
export const LEASE_MS = 30_000
export const RUN_LEASE_MS = 30_000
export const SYNC_INTERVAL_MS = 10_000

/**
 * Deliberate bugs that the invariants must catch (the checker's self-test); `hang` makes closing
 * a process wait for a simulated hour nobody advances, so the schedule cannot finish.
 */
export type Mutation = "doubleSend" | "dropFallback" | "hang"

/** One message a process handed to Pi. */
export interface SendLog {
  readonly proc: Proc
  readonly step: number
  readonly customType: string
  readonly turnIntentId: string | null
  readonly runId: string | null
  readonly phase: string
  readonly userHold: boolean
  readonly shuttingDown: boolean
  /** Written to the branch (false: lost in an aborting turn or with its process). */
  written: boolean
}

/** A send Pi writes once the `agent_settled` handlers have returned. */
export interface DeferredSend {
  readonly message: CustomMessage
  readonly options: DeliveryOptions
  readonly log: SendLog
}

/** One process's application graph, over the gated stores and the process's view of the session. */
export const appLayer = (options: {
  readonly filename: string
  readonly token: string
  readonly gate: (operation: string) => Effect.Effect<void, StoreFailure>
  readonly session: PiSessionService
  readonly crashPoints: CrashPointsService
  /** The workflows the process knows (default: the simulation's own). */
  readonly workflows?: ReadonlyArray<unknown>
}) =>
  App.layerWith(
    StoreFaults.layerGated(options.gate).pipe(
      Layer.provide(App.layerStores({ filename: options.filename, busyTimeoutMs: 50 }))
    ),
    {
      workflows: options.workflows ?? [...WORKFLOWS, ...WAIT_WORKFLOWS],
      core: { coordinator: { token: options.token } },
      engine: { leaseMs: RUN_LEASE_MS, renewEveryMs: RUN_LEASE_MS / 3 },
      crashPoints: options.crashPoints
    }
  ).pipe(
    Layer.provide(
      withTimings({
        deliveryLease: Duration.millis(LEASE_MS),
        syncInterval: Duration.millis(SYNC_INTERVAL_MS)
      })
    ),
    Layer.provideMerge(Layer.succeed(PiSession, options.session))
  )

export type SimServices = Layer.Layer.Success<ReturnType<typeof appLayer>>

export interface Process {
  readonly slot: Proc
  readonly generation: number
  readonly scope: Scope.CloseableScope
  /** Its view of the simulated clock: a killed process's sleeps stop waiting. */
  readonly clock: ProcessClock
  context: Context.Context<SimServices> | null
  fault: FaultKind | null
  dead: boolean
  /** Sends made while this process's `agent_settled` handlers run: Pi writes them afterwards. */
  deferred: Array<DeferredSend>
  settling: number
  /** Natural deliveries waiting for this process's settle handlers to return (rule 4). */
  settleWaiters: Array<Deferred.Deferred<void>>
}

/**
 * Exact crash moments for scripted crash tests: the process dies (SIGKILL) the first time one of
 * its deliveries reaches `point`, or the first time it calls the store operation `beforeStore`.
 */
export interface CrashPlan {
  readonly point?: CrashPoint
  readonly beforeStore?: string
  /** How many calls of `beforeStore` go through first. */
  readonly skip?: number
}

/** SIGKILL: nothing it does from now on reaches the store or the session, and its time stops mattering. */
export const die = (p: Process) => {
  p.dead = true
  p.clock.kill()
  for (const entry of p.deferred) entry.log.written = false
  p.deferred = []
}

const BUSY = "SqliteError: database is locked (SQLITE_BUSY)"
const READONLY = "SqliteError: attempt to write a readonly database (SQLITE_READONLY)"

/**
 * The gate every store call of the process passes: dead processes' calls die, a crash plan may
 * kill it right here (`crashHere`), and the schedule's fault answers as SQLite would.
 */
export const gateOf =
  (
    proc: () => Process | null,
    hooks: {
      readonly point: Effect.Effect<void>
      readonly touch: () => void
      readonly crashHere: (p: Process, operation: string) => Effect.Effect<void> | null
    }
  ) =>
  (operation: string) =>
    Effect.suspend((): Effect.Effect<void, StoreFailure> => {
      hooks.touch()
      const p = proc()
      if (p === null || p.dead) return Effect.die(new Error("the process was killed"))
      const crash = hooks.crashHere(p, operation)
      if (crash !== null) return Effect.zipRight(crash, Effect.die(new Error("killed")))
      if (p.fault === "throw") return Effect.die(new Error(`injected throw in ${operation}`))
      if (p.fault !== null) {
        return Effect.fail(
          new StoreFailure(
            p.fault === "busy"
              ? { operation, reason: "Lock", message: BUSY }
              : { operation, reason: "ReadOnly", message: READONLY }
          )
        )
      }
      return Effect.yieldNow()
    }).pipe(Effect.zipLeft(hooks.point))
