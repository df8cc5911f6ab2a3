/**
 * The operator CLI's commands (`intents`, `runs`, `show`, `doctor`, `serve`) over the stores,
 * opened read-only (`open.ts`: a SQLite file, or a PostgreSQL database when the location is a
 * `postgres://` URL). Each command prints a table or page, or `--json` for scripts; failures are
 * typed (`CliFailure`, the stores' errors) and turned into one line by `main.ts`.
 */
import { Args, Command, Options } from "@effect/cli"
import { Clock, Console, Effect, Option } from "effect"
import { legacyLaunchFailures } from "../store/database.ts"
import { conditionKind, runCondition } from "../domain/run-condition.ts"
import { endOwesNothing } from "../interruption/run-debts.ts"
import { remindersSent } from "../store/operator-reads.ts"
import { RunStore } from "../store/run-store.ts"
import { MAX_LIST_LIMIT, TurnIntentStore } from "../store/turn-intent-store.ts"
import { chainStatus } from "../terminal/launches.ts"
import { diagnose, healthy } from "./doctor.ts"
import { CliFailure, paint, type Style, wantsColour } from "./format.ts"
import { resolveId, runIdOf, sessionIdOf } from "./lookup.ts"
import { withStores } from "./open.ts"
import { serve } from "./serve.ts"
import {
  CONDITION_STATES,
  filterState,
  keptBy,
  listingFor,
  STATE_CHOICES,
  STORED_STATES
} from "./run-states.ts"
import { intentsTable, runsTable, runJson, sentFor, showIntent, showRun, stepJson } from "./views.ts"
import { waitJson } from "./waits.ts"

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

/** `--state`'s value, or one line naming the flag, the choices and what was given (exit 2). */
const stateOf = (typed: Option.Option<string>) =>
  Option.match(typed, {
    onNone: () => Effect.succeed(undefined),
    onSome: (value) => {
      const state = filterState(value)
      return state !== null
        ? Effect.succeed(state)
        : Effect.fail(
            new CliFailure({
              message: `--state: expected one of ${STATE_CHOICES.join(", ")}; got ${JSON.stringify(value)}`,
              exitCode: 2
            })
          )
    }
  })

const runs = Command.make(
  "runs",
  {
    db: dbOption,
    json: jsonOption,
    session: sessionOption,
    // Text, checked below, so a bad value's line names the flag and the choices.
    state: Options.text("state").pipe(
      Options.withDescription(
        `only runs in this state (${STORED_STATES.join(", ")}) or condition (${CONDITION_STATES.join(", ")}; ` +
          "waiting: at a waiting checkpoint, for an answer)"
      ),
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
          const session = Option.isSome(args.session)
            ? { targetSessionId: yield* sessionIdOf(args.session.value) }
            : {}
          const listing = listingFor(state, args.limit)
          const listed = yield* (yield* RunStore).list({
            ...session,
            ...(listing.stored === undefined ? {} : { state: listing.stored }),
            limit: listing.listLimit
          })
          const now = yield* Clock.currentTimeMillis
          const reminders = yield* remindersSent(listed.flatMap((run) => run.currentAttemptId ?? []))
          const found = keptBy(
            listing,
            listed,
            (run) => conditionKind(runCondition(run, now, sentFor(run, reminders))),
            args.limit
          )
          if (args.json) return yield* printJson(found.map((run) => runJson(run, now, reminders)))
          yield* Console.log(runsTable(yield* styled(args.wide), found, reminders))
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
        const reminders = yield* remindersSent(steps.map((step) => step.attemptId))
        const raised = yield* intentStore.list({ runId, limit: MAX_LIST_LIMIT })
        // Its waiting checkpoints, answered or not: the open one is what the run waits for.
        const waits = yield* runStore.waits({ runId, limit: MAX_LIST_LIMIT })
        const openWait = waits.find((wait) => wait.requestId === run.value.waitRequestId)
        // The restart chain (lineage and the terminal turn's launch); a file from before the
        // launch table has none.
        const chain = yield* chainStatus(runId).pipe(Effect.orElseSucceed((): ReadonlyArray<string> => []))
        if (args.json) {
          return yield* printJson({
            run: runJson(run.value, yield* Clock.currentTimeMillis, reminders),
            wait: openWait === undefined ? null : waitJson(openWait),
            waits: waits.map(waitJson),
            steps: steps.map(stepJson),
            intents: raised,
            restartChain: chain
          })
        }
        yield* Console.log(showRun(yield* style, run.value, steps, raised, chain, reminders, waits))
      })
    )
).pipe(Command.withDescription("one turn intent (its life) or run (its steps and intents) in full"))

/** A duration typed as `90s`, `10m`, `2h` or plain minutes (`10`), in milliseconds; null when not one. */
export const parseDuration = (typed: string): number | null => {
  const match = /^(\d+)(s|m|h)?$/.exec(typed.trim())
  if (match === null) return null
  const unit = { s: 1_000, m: 60_000, h: 3_600_000 }[match[2] ?? "m"] ?? 60_000
  return Number(match[1]) * unit
}

const doctor = Command.make(
  "doctor",
  {
    db: dbOption,
    json: jsonOption,
    stale: Options.integer("stale-minutes").pipe(
      Options.withDescription("a pending intent this old that never became eligible counts as stranded"),
      Options.withDefault(10)
    ),
    staleAfter: Options.text("stale-after").pipe(
      Options.withDescription(
        "a run parked or orphaned this long counts as stalled, and one waiting for an answer this long is listed as a long wait (30s, 10m, 2h; default 10m)"
      ),
      Options.withDefault("10m")
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
      const staleRunMs = parseDuration(args.staleAfter)
      if (staleRunMs === null || staleRunMs < 1_000) {
        return yield* new CliFailure({
          message: `--stale-after must be a duration of at least 1s (like 30s, 10m or 2h), got ${JSON.stringify(args.staleAfter)}`,
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
            staleRunMs,
            legacyPending: yield* legacyLaunchFailures,
            pending,
            running: yield* runs.list({ state: "running", limit: 1_000 }),
            waiting: yield* runs.list({ state: "waiting", limit: 1_000 }),
            waits: yield* runs.waits({ open: true, limit: 1_000 }),
            retiredRuns
          })
          const ok = healthy(findings)
          if (args.json) {
            yield* printJson({ database: path, healthy: ok, findings })
          } else {
            const s = yield* style
            const lines = [`database ${path}`]
            for (const finding of findings) {
              const label = finding.healthy
                ? paint(s, finding.label === undefined ? "good" : "warn", (finding.label ?? "ok").padEnd(7))
                : paint(s, "bad", "PROBLEM")
              lines.push(`${label} ${finding.summary}`)
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

const serveCommand = Command.make(
  "serve",
  {
    db: dbOption,
    port: Options.integer("port").pipe(
      Options.withDescription("the port on 127.0.0.1 to serve on (default 0: a free one)"),
      Options.withDefault(0)
    )
  },
  (args) => serve(args.db, args.port)
).pipe(
  Command.withDescription(
    "a local read-only web page of the runs and their timelines: prints its URL with an access token, serves until Ctrl-C"
  )
)

export const root = Command.make("pi-workflow-turns").pipe(
  Command.withDescription("inspect the pi-workflow-turns controller database (read-only)"),
  Command.withSubcommands([intents, runs, show, doctor, serveCommand])
)
