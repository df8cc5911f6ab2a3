/**
 * The service graph in one place. Everything the Pi extension runs is built here from one
 * SQLite file, the workflow definitions and a PiSession:
 *
 *   Database ─┬─ TurnIntentStore ─┐
 *             └─ RunStore ────────┼─ Engine ◄─ WorkflowRegistry
 *   PiSession ─┬─ Coordinator ◄───┤
 *              └─ SourceEvents ◄──┘   (SourceEvents + Coordinator = the successor-turn core)
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { StoreFailure } from "../domain/errors.ts"
import { type CoreOptions, layerCore } from "../delivery/core-layer.ts"
import * as CrashPoints from "../delivery/crash-points.ts"
import type { Coordinator } from "../delivery/coordinator.ts"
import type { EngineConfig } from "../engine/engine.ts"
import type { Engine } from "../engine/engine.ts"
import * as EngineLive from "../engine/engine-live.ts"
import type { DefinitionError } from "../engine/errors.ts"
import { layerFromDefinitions, type WorkflowEntry, type WorkflowRegistry } from "../engine/registry.ts"
import type { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import type { SourceEvents } from "../interruption/source-events.ts"
import type { PiSession } from "../session/pi-session.ts"
import { Database, type DatabaseOptions, type OpenError } from "../store/database.ts"
import type { PgDatabaseOptions } from "../store/pg/database-pg.ts"
import type { RunStore } from "../store/run-store.ts"
import * as RunStoreSqlite from "../store/run-store-sqlite.ts"
import type { TurnIntentStore } from "../store/turn-intent-store.ts"
import * as TurnIntentStoreSqlite from "../store/turn-intent-store-sqlite.ts"
import * as FinalOnEnd from "../notifications/final-on-end.ts"
import * as NotificationsLive from "../notifications/notifications.ts"
import type { Notifications, NotificationsConfig } from "../notifications/notifications.ts"
import * as NotifierLive from "../notifications/notifier.ts"
import type { Notifier } from "../notifications/notifier.ts"
import type { NotificationStore } from "../store/notification-store.ts"
import * as NotificationStoreSqlite from "../store/notification-store-sqlite.ts"
import * as Maintenance from "./maintenance.ts"
import * as LaunchStoreSqlite from "../store/launch-store-sqlite.ts"
import type { LaunchStore } from "../terminal/launch-store.ts"
import * as TerminalMessages from "../terminal/terminal-messages.ts"
import * as SyncOnEligible from "./sync-on-eligible.ts"

export interface AppConfig {
  /** A SQLite file (`filename`) or a PostgreSQL database (`url`). */
  readonly database: DatabaseOptions | PgDatabaseOptions
  /** Validated definitions (see `src/app/workflows.ts`); one bad entry fails the layer. */
  readonly workflows: ReadonlyArray<WorkflowEntry>
  readonly engine?: EngineConfig
  readonly core?: CoreOptions
  readonly notifications?: NotificationsConfig
  /** Spacing of the periodic reconciliation pass (default 5 s); null turns it off. */
  readonly maintenanceIntervalMs?: number | null
}

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
  | Database
  | SqlClient.SqlClient

/** Every store on one database file. */
export const layerStores = (options: DatabaseOptions) =>
  Layer.mergeAll(
    TurnIntentStoreSqlite.layer,
    RunStoreSqlite.layer,
    NotificationStoreSqlite.layer,
    LaunchStoreSqlite.layer
  ).pipe(Layer.provideMerge(Database.layer(options)))

/**
 * Every store on one PostgreSQL database: the same services as `layerStores`. Loaded on first
 * use, so a program that never selects PostgreSQL needs neither @effect/sql-pg nor its chunk.
 */
export const layerStoresPg = (options: PgDatabaseOptions) =>
  Layer.unwrapEffect(
    Effect.tryPromise({
      try: () => import("../store/pg/stores-pg.ts"),
      catch: (cause) =>
        new StoreFailure({
          operation: "open",
          message: `PostgreSQL support cannot load (is @effect/sql-pg installed?): ${String(cause)}`,
          cause
        })
    }).pipe(Effect.map((pg) => pg.layerStoresPg(options)))
  )

/** The whole application over a PiSession (live from Pi, or `layerFake` in tests). */
export const layerApp = (
  config: AppConfig
): Layer.Layer<AppServices, OpenError | DefinitionError, PiSession> => {
  // Test-only: PI_WORKFLOW_TURNS_CRASH_AT kills the process at a delivery step (docs/reliability.md).
  const database = config.database
  const stores = Layer.merge(
    "url" in database ? layerStoresPg(database) : layerStores(database),
    CrashPoints.layerFromEnv
  )
  // Fallbacks of ended runs carry the terminal decision (src/terminal/terminal-messages.ts).
  const core = layerCore(config.core).pipe(
    Layer.provide(TerminalMessages.layerComposer),
    Layer.provideMerge(stores)
  )
  // The engine publishes through a SourceEvents that also starts a fallback pass after an
  // eligible event (see sync-on-eligible.ts); `core` is one layer value, so it is built once.
  const events = SyncOnEligible.layer.pipe(Layer.provide(core))
  // ... and presents completed runs through a Coordinator that adds the terminal decision.
  const coordinator = TerminalMessages.layerCoordinator.pipe(Layer.provide(core))
  const registry = layerFromDefinitions(config.workflows)
  // Passive notifications: the Notifier shows them, Notifications takes reports (and is the
  // engine's StepProgress), and the engine's RunStore writes each run's `final` with its end.
  const notifier = NotifierLive.layer.pipe(Layer.provideMerge(stores))
  const notifications = NotificationsLive.layer(config.notifications).pipe(Layer.provideMerge(notifier))
  const runStore = FinalOnEnd.layer.pipe(Layer.provide(notifications))
  const app = EngineLive.layer(config.engine).pipe(
    Layer.provide(Layer.mergeAll(events, runStore, coordinator)),
    Layer.provideMerge(Layer.mergeAll(core, registry, notifications))
  )
  // The later layer of a merge wins: the app exposes the decorated SourceEvents.
  const whole = Layer.merge(app, events)
  const maintenance = Maintenance.layer(
    config.maintenanceIntervalMs === undefined
      ? Maintenance.DEFAULT_MAINTENANCE_INTERVAL_MS
      : config.maintenanceIntervalMs
  )
  return Layer.merge(whole, maintenance.pipe(Layer.provide(whole)))
}
