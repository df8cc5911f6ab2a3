/**
 * The four stores on PostgreSQL. The store logic is the SQLite stores' own (`../*-sqlite.ts`),
 * run over the PostgreSQL `Database` + `SqlClient` of `database-pg.ts`: every statement they
 * issue is portable SQL or translated there, every multi-statement change runs in one
 * SERIALIZABLE transaction, and every claim locks the rows it takes. So both backends share one
 * definition of each operation's semantics and one set of tests.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Layer } from "effect"
import type { LaunchStore } from "../../terminal/launch-store.ts"
import type { Database, OpenError } from "../database.ts"
import * as LaunchStoreSqlite from "../launch-store-sqlite.ts"
import type { NotificationStore } from "../notification-store.ts"
import * as NotificationStoreSqlite from "../notification-store-sqlite.ts"
import type { RunStore } from "../run-store.ts"
import * as RunStoreSqlite from "../run-store-sqlite.ts"
import type { TurnIntentStore } from "../turn-intent-store.ts"
import * as TurnIntentStoreSqlite from "../turn-intent-store-sqlite.ts"
import { layer as databaseLayer, type PgDatabaseOptions } from "./database-pg.ts"

type WithDatabase<S> = Layer.Layer<S | Database | SqlClient.SqlClient, OpenError>

export const layerTurnIntentStorePg = (options: PgDatabaseOptions): WithDatabase<TurnIntentStore> =>
  TurnIntentStoreSqlite.layer.pipe(Layer.provideMerge(databaseLayer(options)))

export const layerRunStorePg = (options: PgDatabaseOptions): WithDatabase<RunStore> =>
  RunStoreSqlite.layer.pipe(Layer.provideMerge(databaseLayer(options)))

export const layerNotificationStorePg = (options: PgDatabaseOptions): WithDatabase<NotificationStore> =>
  NotificationStoreSqlite.layer.pipe(Layer.provideMerge(databaseLayer(options)))

/** All four stores on one pool. */
export const layerStoresPg = (
  options: PgDatabaseOptions
): WithDatabase<TurnIntentStore | RunStore | NotificationStore | LaunchStore> =>
  Layer.mergeAll(
    TurnIntentStoreSqlite.layer,
    RunStoreSqlite.layer,
    NotificationStoreSqlite.layer,
    LaunchStoreSqlite.layer
  ).pipe(Layer.provideMerge(databaseLayer(options)))
