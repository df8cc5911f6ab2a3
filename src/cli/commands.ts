/**
 * The operator CLI's commands (`intents`, `runs`, `show`, `doctor`) over the stores, opened
 * read-only: a SQLite file, or a PostgreSQL database when the location is a `postgres://` URL. Each command prints a table or page, or `--json` for scripts; failures are typed
 * (`CliFailure`, the stores' errors) and turned into one line by `main.ts`.
 */
import { existsSync, statSync } from "node:fs"
import { resolve } from "node:path"
import { Args, Command, Options } from "@effect/cli"
import { Clock, Console, Effect, Layer, Option, Schema } from "effect"
import { isPostgresUrl, resolveDbPath } from "../app/db-path.ts"
import { Database, legacyLaunchFailures } from "../store/database.ts"
import { endOwesNothing } from "../interruption/run-debts.ts"
import { StoreFailure } from "../store/store-errors.ts"
import { isNotADatabase, readability, readShape, refusal, StoreRefused } from "../store/operator-reads.ts"
import { RunState, RunStore } from "../store/run-store.ts"
import * as LaunchStoreSql from "../store/launch-store-sql.ts"
import * as RunStoreSql from "../store/run-store-sql.ts"
import { MAX_LIST_LIMIT, TurnIntentStore } from "../store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../store/turn-intent-store-sql.ts"
import { chainStatus } from "../terminal/launches.ts"
import { diagnose, healthy } from "./doctor.ts"
import { CliFailure, paint, type Style, wantsColour } from "./format.ts"
import { resolveId, runIdOf, sessionIdOf, databasesBeside, missingDatabase } from "./lookup.ts"
import { intentsTable, runsTable, runJson, showIntent, showRun, stepJson } from "./views.ts"

/**
 * How long a read waits for a lock. WAL readers never wait for a writer, so this only matters
 * when the file is being recovered or held exclusively; then the CLI says "busy" quickly
 * instead of stalling a live Pi's user.
 */
export const BUSY_TIMEOUT_MS = 50

const dbOption = Options.text("db").pipe(
  Options.withDescription(
    "the controller database: a file, or a postgres:// URL (default: PI_WORKFLOWS_DB, else this project's file)"
  ),
  Options.optional
)
const jsonOption = Options.boolean("json").pipe(
  Options.withDescription("print the records as JSON for scripts (every field, full IDs)")
)
const wideOption = Options.boolean("wide").pipe(
  Options.withDescription(
    "show every column in full (full IDs, session, creation time) instead of fitting 80 columns"
  )
)
const sessionOption = Options.text("session").pipe(
  Options.withDescription("only this Pi session (its ID or a unique prefix of it)"),
  Options.optional
)
const limitOption = Options.integer("limit").pipe(
  Options.withDescription(`at most this many rows (1 … ${MAX_LIST_LIMIT})`),
  Options.withDefault(50)
)

const styled = (wide: boolean) =>
  Effect.map(
    Clock.currentTimeMillis,
    (now): Style => ({
      now,
      colour: wantsColour(process.stdout, process.env),
      wide
    })
  )
const style = styled(false)

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const checkLimit = (limit: number) =>
  Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_LIST_LIMIT
    ? Effect.void
    : Effect.fail(
        new CliFailure({ message: `--limit must be from 1 to ${MAX_LIST_LIMIT}, got ${limit}`, exitCode: 2 })
      )

/**
 * The database to read: `--db` (a postgres:// URL, or a path relative to the working directory),
 * else `PI_WORKFLOWS_DB` (a URL or an absolute path), else where the extension keeps this
 * project's file.
 */
export const databasePath = (db: Option.Option<string>) =>
  Effect.try({
    try: () =>
      Option.match(db, {
        onNone: () => resolveDbPath(process.cwd(), process.env),
        onSome: (location) => (isPostgresUrl(location) ? location : resolve(process.cwd(), location))
      }),
    catch: (error) =>
      new CliFailure({ message: error instanceof Error ? error.message : String(error), exitCode: 2 })
  })

/** How long the CLI waits for a PostgreSQL server before saying it cannot be reached. */
export const CONNECT_TIMEOUT_MS = 5_000

/** The PostgreSQL module, loaded only when a URL is given (as the extension loads it). */
const loadPg = Effect.tryPromise({
  try: () => import("../store/pg/database-pg.ts"),
  catch: (cause) =>
    new StoreFailure({
      operation: "open",
      message: `PostgreSQL support cannot load (is @effect/sql-pg installed?): ${String(cause)}`,
      cause
    })
})

const storesAt = (location: string) =>
  Layer.mergeAll(TurnIntentStoreSql.layer, RunStoreSql.layer, LaunchStoreSql.layer).pipe(
    Layer.provideMerge(
      isPostgresUrl(location)
        ? Layer.unwrapEffect(
            Effect.map(loadPg, (pg) =>
              pg.layer({
                url: location,
                readonly: true,
                busyTimeoutMs: BUSY_TIMEOUT_MS,
                connectTimeoutMs: CONNECT_TIMEOUT_MS,
                maxConnections: 2
              })
            )
          )
        : Database.layer({ filename: location, readonly: true, busyTimeoutMs: BUSY_TIMEOUT_MS })
    )
  )

type Stores = Layer.Layer.Success<ReturnType<typeof storesAt>>

/**
 * Before any store reads a table: a database the stores cannot read as it is (legacy rows in a
 * file Pi refuses, a table missing) is refused from its structure, changing nothing.
 */
const readable = (shown: string, postgres: boolean) =>
  Effect.flatMap(readShape, (shape) => {
    const refused = refusal(shown, postgres, readability(shape))
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

/** An open that failed because the file is no SQLite database at all, said so plainly. */
const notADatabase =
  (shown: string) =>
  <E>(error: E): E | StoreRefused =>
    error instanceof StoreFailure && isNotADatabase(error)
      ? new StoreRefused({
          databasePath: shown,
          postgres: false,
          reason: "notADatabase",
          pending: 0,
          missing: []
        })
      : error

/** Run `program` over the stores of the database, opened read-only (given the name it shows). */
const withStores = <A, E>(
  db: Option.Option<string>,
  program: (path: string) => Effect.Effect<A, E, Stores>
) =>
  Effect.gen(function* () {
    const location = yield* databasePath(db)
    if (isPostgresUrl(location)) {
      const pg = yield* loadPg
      const shown = pg.redactUrl(location)
      return yield* Effect.provide(Effect.zipRight(readable(shown, true), program(shown)), storesAt(location))
    }
    const path = location
    const exists = yield* Effect.sync(() => fileExists(path))
    if (!exists) {
      // The default file (keyed by this directory): name the databases beside it instead.
      const byDirectory = Option.isNone(db) && (process.env.PI_WORKFLOWS_DB ?? "") === ""
      return yield* new CliFailure({
        message: byDirectory
          ? missingDatabase(path, databasesBeside(path))
          : `no controller database at ${path} (pass --db PATH or set PI_WORKFLOWS_DB)`,
        exitCode: 2
      })
    }
    return yield* Effect.provide(
      Effect.zipRight(readable(path, false), program(path)),
      Layer.mapError(storesAt(path), notADatabase(path))
    )
  })

const fileExists = (path: string): boolean => existsSync(path) && statSync(path).isFile()

const intents = Command.make(
  "intents",
  {
    db: dbOption,
    json: jsonOption,
    session: sessionOption,
    run: Options.text("run").pipe(Options.withDescription("only this run ID"), Options.optional),
    pending: Options.boolean("pending").pipe(Options.withDescription("only unresolved intents")),
    eligible: Options.boolean("eligible").pipe(
      Options.withDescription("only unresolved, fallback-eligible intents")
    ),
    resolved: Options.boolean("resolved").pipe(Options.withDescription("only resolved intents")),
    limit: limitOption,
    wide: wideOption
  },
  (args) =>
    Effect.gen(function* () {
      const chosen = [
        args.pending && "pending",
        args.eligible && "eligible",
        args.resolved && "resolved"
      ].filter((s): s is "pending" | "eligible" | "resolved" => s !== false)
      if (chosen.length > 1) {
        return yield* new CliFailure({
          message: `choose one of --pending, --eligible and --resolved, not ${chosen.map((s) => `--${s}`).join(" and ")}`,
          exitCode: 2
        })
      }
      yield* checkLimit(args.limit)
      yield* withStores(args.db, () =>
        Effect.gen(function* () {
          const found = yield* (yield* TurnIntentStore).list({
            ...(Option.isSome(args.session)
              ? { targetSessionId: yield* sessionIdOf(args.session.value) }
              : {}),
            ...(Option.isSome(args.run) ? { runId: yield* runIdOf(args.run.value) } : {}),
            state: chosen[0] ?? "all",
            limit: args.limit
          })
          if (args.json) return yield* printJson(found)
          yield* Console.log(intentsTable(yield* styled(args.wide), found))
        })
      )
    })
).pipe(Command.withDescription("list turn intents, oldest first"))

const isRunState = Schema.is(RunState)

/** `--state`'s value, or one line naming the flag, the choices and what was given (exit 2). */
const stateOf = (typed: Option.Option<string>) =>
  Option.match(typed, {
    onNone: () => Effect.succeed(undefined),
    onSome: (value) =>
      isRunState(value)
        ? Effect.succeed(value)
        : Effect.fail(
            new CliFailure({
              message: `--state: expected one of ${RunState.literals.join(", ")}; got ${JSON.stringify(value)}`,
              exitCode: 2
            })
          )
  })

const runs = Command.make(
  "runs",
  {
    db: dbOption,
    json: jsonOption,
    session: sessionOption,
    // Text, checked below, so a bad value's line names the flag and the choices.
    state: Options.text("state").pipe(
      Options.withDescription(`only runs in this state: ${RunState.literals.join(", ")}`),
      Options.optional
    ),
    limit: limitOption,
    wide: wideOption
  },
  (args) =>
    Effect.gen(function* () {
      yield* checkLimit(args.limit)
      const state = yield* stateOf(args.state)
      yield* withStores(args.db, () =>
        Effect.gen(function* () {
          const found = yield* (yield* RunStore).list({
            ...(Option.isSome(args.session)
              ? { targetSessionId: yield* sessionIdOf(args.session.value) }
              : {}),
            ...(state === undefined ? {} : { state }),
            limit: args.limit
          })
          if (args.json) return yield* printJson(found.map(runJson))
          yield* Console.log(runsTable(yield* styled(args.wide), found))
        })
      )
    })
).pipe(Command.withDescription("list workflow runs, newest first"))

const show = Command.make(
  "show",
  {
    db: dbOption,
    json: jsonOption,
    id: Args.text({ name: "intentId|runId" }).pipe(
      Args.withDescription("a turn intent or run ID, or a unique prefix of one (the short ID a table shows)")
    )
  },
  (args) =>
    withStores(args.db, () =>
      Effect.gen(function* () {
        const intentStore = yield* TurnIntentStore
        const runStore = yield* RunStore
        const match = yield* resolveId(args.id)
        if (match._tag === "Intent") {
          const intent = yield* intentStore.get(match.intentId)
          if (Option.isNone(intent)) {
            return yield* new CliFailure({ message: `no turn intent with ID ${match.intentId}`, exitCode: 1 })
          }
          if (args.json) return yield* printJson({ intent: intent.value })
          return yield* Console.log(showIntent(yield* style, intent.value))
        }
        const runId = match.runId
        const run = yield* runStore.get(runId)
        if (Option.isNone(run)) {
          return yield* new CliFailure({ message: `no run with ID ${runId}`, exitCode: 1 })
        }
        const steps = yield* runStore.steps(runId)
        const raised = yield* intentStore.list({ runId, limit: MAX_LIST_LIMIT })
        // The restart chain (lineage and the terminal turn's launch); a file from before the
        // launch table has none.
        const chain = yield* chainStatus(runId).pipe(Effect.orElseSucceed((): ReadonlyArray<string> => []))
        if (args.json) {
          return yield* printJson({
            run: runJson(run.value),
            steps: steps.map(stepJson),
            intents: raised,
            restartChain: chain
          })
        }
        yield* Console.log(showRun(yield* style, run.value, steps, raised, chain))
      })
    )
).pipe(Command.withDescription("one turn intent (its life) or run (its steps and intents) in full"))

const doctor = Command.make(
  "doctor",
  {
    db: dbOption,
    json: jsonOption,
    stale: Options.integer("stale-minutes").pipe(
      Options.withDescription("a pending intent this old that never became eligible counts as stranded"),
      Options.withDefault(10)
    )
  },
  (args) =>
    Effect.gen(function* () {
      if (args.stale < 1) {
        return yield* new CliFailure({
          message: `--stale-minutes must be at least 1, got ${args.stale}`,
          exitCode: 2
        })
      }
      yield* withStores(args.db, (path) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const runs = yield* RunStore
          const pending = yield* (yield* TurnIntentStore).list({ state: "pending", limit: MAX_LIST_LIMIT })
          const retiredRuns = new Set<string>()
          for (const runId of new Set(pending.map((intent) => intent.runId))) {
            const run = yield* runs.get(runId)
            if (Option.isSome(run) && endOwesNothing(run.value)) retiredRuns.add(runId)
          }
          const findings = diagnose({
            databasePath: path,
            now,
            staleMs: args.stale * 60_000,
            legacyPending: yield* legacyLaunchFailures,
            pending,
            running: yield* runs.list({ state: "running", limit: 1_000 }),
            retiredRuns
          })
          const ok = healthy(findings)
          if (args.json) {
            yield* printJson({ database: path, healthy: ok, findings })
          } else {
            const s = yield* style
            const lines = [`database ${path}`]
            for (const finding of findings) {
              lines.push(
                `${finding.healthy ? paint(s, "good", "ok     ") : paint(s, "bad", "PROBLEM")} ${finding.summary}`
              )
              for (const item of finding.items) lines.push(`          ${item}`)
            }
            lines.push(ok ? "healthy" : "problems found (see above)")
            yield* Console.log(lines.join("\n"))
          }
          if (!ok) return yield* new CliFailure({ message: "", exitCode: 1 })
        })
      ).pipe(
        // Legacy rows are doctor's finding (exit 1: a problem, with its fix), said in one line.
        Effect.catchTag("StoreRefused", (refused) =>
          Effect.fail(
            refused.reason === "legacyLaunchFailures"
              ? new CliFailure({ message: refused.message, exitCode: 1 })
              : refused
          )
        )
      )
    })
).pipe(Command.withDescription("check the database and explain what needs attention (exit 1 when it does)"))

export const root = Command.make("pi-workflow-turns").pipe(
  Command.withDescription("inspect the pi-workflow-turns controller database (read-only)"),
  Command.withSubcommands([intents, runs, show, doctor])
)
