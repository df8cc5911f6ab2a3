/**
 * The service graph in one place. Everything the Pi extension runs is built here from one
 * SQLite file (or one PostgreSQL database), the workflow definitions and a PiSession:
 *
 *   Database ─┬─ TurnIntentStore ─┐
 *             └─ RunStore ────────┼─ Engine ◄─ WorkflowRegistry
 *   PiSession ─┬─ Coordinator ◄───┤
 *              └─ SourceEvents ◄──┘   (SourceEvents + Coordinator = the successor-turn core)
 *
 * Three services reach the engine decorated, each a layer that takes the service from its input
 * and provides it again under the same Tag, so the engine sees only the decorated one:
 *
 *   RunStore     ─► FinalOnEnd.layer ─► StatusLine.layer ─► RunStore      (engine)
 *   Coordinator  ─► TerminalMessages.layerCoordinator ─► Coordinator   (engine)
 *   SourceEvents ─► layerSyncOnEligible (below) ─► layerTurnTrace ─► SourceEvents  (engine and caller)
 *
 * - FinalOnEnd.layer: a run's end writes the run's one `final` notification in the same
 *   transaction, so a run never ends without it or with two.
 * - StatusLine.layer: each write of a run wakes the live status line of interactive Pi, which
 *   rereads the run and redraws its one footer line (app/status-line.ts).
 * - TerminalMessages.layerCoordinator: a completed run's presentation carries the terminal
 *   decision (restart or stop) and its card fields.
 * - layerSyncOnEligible: an event that made an intent eligible outside a turn starts a fallback
 *   pass at once instead of waiting for the periodic one.
 * - layerTurnTrace (telemetry/turn-traces.ts): an interruption published during a tool call joins that
 *   call's trace, and its intent's delivery continues it, through the TurnTraces memory that
 *   the coordinator shares.
 *
 * Where the spans go is the runtime's tracer, not this graph's: the extension and the CLI add an
 * OTLP exporter below the graph when OTEL_EXPORTER_OTLP_ENDPOINT asks for one
 * (telemetry/otlp.ts), and nothing otherwise.
 *
 * The caller's RunStore and Coordinator are the undecorated ones.
 *
 * The stores are one input layer (`layerStores`, or your own through `layerWith`: a backend,
 * or the stores wrapped with faults or probes); the application exposes its services, never the
 * connection under them.
 */
import { type Context, Effect, FiberSet, Layer } from "effect"
import {
  Coordinator,
  CrashPoints,
  type CrashPointsService,
  layerCrashPointsFromEnv
} from "../delivery/coordinator.ts"
import * as Core from "../delivery/coordinator-live.ts"
import type { Engine, EngineConfig } from "../engine/engine.ts"
import * as EngineLive from "../engine/engine-live.ts"
import type { DefinitionError } from "../engine/errors.ts"
import { layerFromDefinitions, type WorkflowEntry, type WorkflowRegistry } from "../engine/registry.ts"
import { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import { SourceEvents } from "../interruption/source-events.ts"
import * as FinalOnEnd from "../notifications/final-on-end.ts"
import * as NotificationsLive from "../notifications/notifications.ts"
import { Notifications, type NotificationsConfig } from "../notifications/notifications.ts"
import type { Notifier } from "../notifications/notifier.ts"
import * as NotifierLive from "../notifications/notifier.ts"
import type { PiSession } from "../session/pi-session.ts"
import { Database, type DatabaseOptions, type OpenError } from "../store/database.ts"
import * as LaunchStoreSql from "../store/launch-store-sql.ts"
import { NotificationStore } from "../store/notification-store.ts"
import * as NotificationStoreSql from "../store/notification-store-sql.ts"
import type { PgDatabaseOptions } from "../store/pg/database-pg.ts"
import { RunStore } from "../store/run-store.ts"
import * as RunStoreSql from "../store/run-store-sql.ts"
import { StoreFailure } from "../store/store-errors.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../store/turn-intent-store-sql.ts"
import { LaunchStore } from "../store/launch-store.ts"
import { StepReminderStore } from "../store/step-reminder-store.ts"
import * as StepReminderStoreSql from "../store/step-reminder-store-sql.ts"
import * as TerminalMessages from "../terminal/terminal-decision.ts"
import { layerMaintenance } from "./session-hooks.ts"
import * as StatusLine from "./status-line.ts"
import * as TurnTracesLive from "../telemetry/turn-traces.ts"
import { layerTurnTrace, type TurnTraces } from "../telemetry/turn-traces.ts"

export interface AppOptions {
  /** Validated definitions (see `src/app/workflows.ts`); one bad entry fails the layer. */
  readonly workflows: ReadonlyArray<WorkflowEntry>
  readonly engine?: EngineConfig
  readonly core?: Core.CoreOptions
  readonly notifications?: NotificationsConfig
  /**
   * Test-only: where delivery steps report crash points (scripted crash tests). Default: the
   * `PI_WORKFLOW_TURNS_CRASH_AT` variable, which is unset in production (docs/reliability.md).
   */
  readonly crashPoints?: CrashPointsService
}

export interface AppConfig extends AppOptions {
  /** A SQLite file (`filename`) or a PostgreSQL database (`url`). */
  readonly database: DatabaseOptions | PgDatabaseOptions
}

/**
 * What the application needs from its stores: the four stores and `Database`, whose
 * `immediate` puts writes of several stores in one transaction (a run's end and its final
 * notification). `Database` stays an input: the application does not expose it.
 */
export type StoreServices =
  | TurnIntentStore
  | RunStore
  | NotificationStore
  | LaunchStore
  | StepReminderStore
  | Database

export type AppServices =
  | Engine
  | Coordinator
  | SourceEvents
  | AbortBookkeeping
  | TurnIntentStore
  | RunStore
  | LaunchStore
  | WorkflowRegistry
  | Notifications
  | Notifier
  | NotificationStore
  | StepReminderStore
  | TurnTraces

/** Every store on one SQLite file, with the `Database` they share. */
export const layerStores = (options: DatabaseOptions): Layer.Layer<StoreServices, OpenError> =>
  Layer.mergeAll(
    TurnIntentStoreSql.layer,
    RunStoreSql.layer,
    NotificationStoreSql.layer,
    LaunchStoreSql.layer,
    StepReminderStoreSql.layer
  ).pipe(Layer.provideMerge(Database.layer(options)))

/**
 * Every store on one PostgreSQL database: the same services as `layerStores`. Loaded on first
 * use, so a program that never selects PostgreSQL needs neither @effect/sql-pg nor its chunk.
 */
export const layerStoresPg = (options: PgDatabaseOptions) =>
  Layer.unwrapEffect(
    Effect.tryPromise({
      try: () => import("../store/pg/database-pg.ts"),
      catch: (cause) =>
        new StoreFailure({
          operation: "open",
          message: `PostgreSQL support cannot load (is @effect/sql-pg installed?): ${String(cause)}`,
          cause
        })
    }).pipe(Effect.map((pg) => pg.layerStoresPg(options)))
  )

/** One service of `layer`'s output as a layer of its own (built once: layers are memoised by value). */
const only =
  <I, S>(tag: Context.Tag<I, S>) =>
  <E, R>(layer: Layer.Layer<I, E, R>): Layer.Layer<I, E, R> =>
    Layer.project(layer, tag, tag, (service) => service)

/**
 * Deliver an owed fallback without waiting for the periodic pass. Terminal, handoff and
 * launch-failure events can make an intent eligible while no turn runs (a run that fails after
 * its start result, a queued launch refused at activation after the settle's own pass): no
 * `agent_settled` follows, so the first delivery would otherwise be the periodic pass, seconds
 * later. After each such event this SourceEvents decorator (over the core's SourceEvents and
 * Coordinator) starts one fallback pass in the background. The pass itself decides: a busy
 * session skips it and the next settle delivers.
 * @internal the graph's own decorator (the fault tests rebuild the graph with it)
 */
export const layerSyncOnEligible: Layer.Layer<SourceEvents, never, SourceEvents | Coordinator> = Layer.scoped(
  SourceEvents,
  Effect.gen(function* () {
    const inner = yield* SourceEvents
    const coordinator = yield* Coordinator
    const passes = yield* FiberSet.make()
    const pass = coordinator
      .syncFallbacks("periodic")
      .pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("fallback pass after an eligible event failed", cause)
        )
      )
    return SourceEvents.of({
      publish: (event) =>
        Effect.tap(inner.publish(event), (result) =>
          event._tag !== "ActiveTurnInterrupted" && event._tag !== "Quiet" && result.intentId !== null
            ? FiberSet.run(passes, pass)
            : Effect.void
        )
    })
  })
)

/** The whole application over a PiSession (live from Pi, or `layerFake` in tests), on one SQLite file or one PostgreSQL database. */
export const layer = (config: AppConfig): Layer.Layer<AppServices, OpenError | DefinitionError, PiSession> =>
  layerWith("url" in config.database ? layerStoresPg(config.database) : layerStores(config.database), config)

/**
 * The whole application over `stores`: the hook to run it on another backend or to decorate
 * the stores (faults, probes, a simulated scheduler). Each service it exposes is built once.
 */
export const layerWith = <E, R>(
  stores: Layer.Layer<StoreServices, E, R>,
  options: AppOptions
): Layer.Layer<AppServices, E | DefinitionError, R | PiSession> => {
  // Test-only: PI_WORKFLOW_TURNS_CRASH_AT kills the process at a delivery step (docs/reliability.md).
  // The TurnTraces memory is shared by the trace decorator and the coordinator (one turn, one trace).
  const base = Layer.mergeAll(
    stores,
    options.crashPoints === undefined
      ? layerCrashPointsFromEnv
      : Layer.succeed(CrashPoints, options.crashPoints),
    TurnTracesLive.layer
  )
  // The successor-turn core; fallbacks of ended runs carry the terminal decision
  // (src/terminal/terminal-decision.ts).
  const core = Core.layer(options.core).pipe(
    Layer.provide(TerminalMessages.layerComposer),
    Layer.provideMerge(base)
  )
  // The application's SourceEvents: the core's, plus a fallback pass after an eligible event
  // (layerSyncOnEligible), inside the turn's trace (layerTurnTrace). It is the only SourceEvents
  // the engine and the caller see.
  const events = layerTurnTrace.pipe(
    Layer.provide(Layer.merge(layerSyncOnEligible.pipe(Layer.provide(core)), base))
  )
  // The engine presents completed runs through a Coordinator that adds the terminal decision.
  const presenting = TerminalMessages.layerCoordinator.pipe(Layer.provide(core))
  const registry = layerFromDefinitions(options.workflows)
  // Passive notifications: the Notifier shows them, Notifications takes reports (and is the
  // engine's StepProgress), and the engine's RunStore writes each run's `final` with its end.
  const notifier = NotifierLive.layer.pipe(Layer.provide(base))
  const notifications = NotificationsLive.layer(options.notifications).pipe(
    Layer.provide(Layer.merge(notifier, base))
  )
  const finalOnEnd = FinalOnEnd.layer.pipe(Layer.provide(Layer.mergeAll(notifications, notifier, base)))
  // The live status line of interactive Pi watches the engine's run-store writes (app/status-line.ts).
  const watched = StatusLine.layer.pipe(
    Layer.provide(Layer.merge(finalOnEnd, only(StepReminderStore)(stores)))
  )
  const engine = EngineLive.layer(options.engine).pipe(
    Layer.provide(Layer.mergeAll(events, watched, presenting, registry, notifications))
  )
  const services = Layer.mergeAll(
    engine,
    events,
    only(Coordinator)(core),
    only(AbortBookkeeping)(core),
    only(TurnIntentStore)(stores),
    only(RunStore)(stores),
    only(LaunchStore)(stores),
    only(NotificationStore)(stores),
    only(StepReminderStore)(stores),
    only(TurnTracesLive.TurnTraces)(base),
    registry,
    only(Notifications)(notifications),
    notifier,
    // Delivery code looks the crash hook up in the calling fiber's context (delivery/coordinator.ts), so
    // it must reach the runtime's context too; it is a no-op unless the test variable is set.
    only(CrashPoints)(base)
  )
  // The periodic reconciliation pass, spaced by `TimingPolicy.maintenanceInterval`.
  return Layer.merge(services, layerMaintenance.pipe(Layer.provide(services)))
}
