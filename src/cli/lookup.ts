/**
 * What the operator named: an ID as typed (a whole intent or run ID, or a unique prefix of one,
 * a short ID from a table), and, when this directory has no controller database, the other
 * databases beside it. Exact IDs are read by the stores; prefixes by one bounded query per table
 * (`substr`, the same on SQLite and PostgreSQL), at most `CANDIDATES + 1` rows each.
 */
import { Effect, Option } from "effect"
import { RunStore } from "../store/run-store.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { CliFailure } from "./format.ts"
import { IdPrefixes } from "../store/operator-reads.ts"
import { intentPrefixesOf } from "./views.ts"
import { readdirSync } from "node:fs"
import { basename, dirname } from "node:path"

/** Candidates named in an "ambiguous" error. */
export const CANDIDATES = 5

export type Match =
  | { readonly _tag: "Intent"; readonly intentId: string }
  | { readonly _tag: "Run"; readonly runId: string }

/** The intents and runs whose IDs start with `typed` (bounded; more than one means ambiguous). */
export const matchesOf = (typed: string, tables: ReadonlyArray<"intents" | "runs"> = ["intents", "runs"]) =>
  Effect.gen(function* () {
    const sql = yield* IdPrefixes
    const found: Array<Match> = []
    if (tables.includes("intents")) {
      for (const prefix of intentPrefixesOf(typed)) {
        for (const intentId of yield* sql.idsWithPrefix("intents", prefix, CANDIDATES + 1)) {
          if (!found.some((m) => m._tag === "Intent" && m.intentId === intentId)) {
            found.push({ _tag: "Intent", intentId })
          }
        }
      }
    }
    if (tables.includes("runs")) {
      for (const runId of yield* sql.idsWithPrefix("runs", typed, CANDIDATES + 1))
        found.push({ _tag: "Run", runId })
    }
    return found
  })

/** The ambiguous-prefix line: a few candidates by kind and full ID. */
export const ambiguous = (typed: string, found: ReadonlyArray<Match>): string => {
  const named = found
    .slice(0, CANDIDATES)
    .map((m) => (m._tag === "Intent" ? `intent ${m.intentId}` : `run ${m.runId}`))
  const more = found.length > CANDIDATES ? ", …" : ""
  return `the ID prefix "${typed}" is ambiguous: it matches ${named.join(", ")}${more}; give more of the ID`
}

/** The intent or run an ID names: the whole ID, else a unique prefix of one (exit 1 none, 2 ambiguous). */
export const resolveId = (typed: string, tables: ReadonlyArray<"intents" | "runs"> = ["intents", "runs"]) =>
  Effect.gen(function* () {
    if (tables.includes("intents") && Option.isSome(yield* (yield* TurnIntentStore).get(typed))) {
      return { _tag: "Intent", intentId: typed } satisfies Match
    }
    if (tables.includes("runs") && Option.isSome(yield* (yield* RunStore).get(typed))) {
      return { _tag: "Run", runId: typed } satisfies Match
    }
    const found = typed === "" ? [] : yield* matchesOf(typed, tables)
    const [only] = found
    if (only === undefined) {
      const kind = tables.length === 2 ? "turn intent or run" : tables[0] === "runs" ? "run" : "turn intent"
      return yield* new CliFailure({ message: `no ${kind} with ID ${typed}`, exitCode: 1 })
    }
    if (found.length > 1) return yield* new CliFailure({ message: ambiguous(typed, found), exitCode: 2 })
    return only
  })

/**
 * A `--run` value: a unique prefix of a run's ID stands for that run; anything else is taken as
 * typed (an intent may name a run that has no record, and then the listing is simply empty).
 */
export const runIdOf = (typed: string) =>
  resolveId(typed, ["runs"]).pipe(
    Effect.map((match) => (match._tag === "Run" ? match.runId : typed)),
    Effect.catchIf(
      (error) => error instanceof CliFailure && error.exitCode === 1,
      () => Effect.succeed(typed)
    )
  )

/**
 * A `--session` value: a unique prefix of a Pi session ID (of a stored run or intent) stands for
 * that session, as a short ID does for a run; a whole ID, or a prefix of none, is taken as typed.
 */
export const sessionIdOf = (typed: string) =>
  Effect.gen(function* () {
    const found = yield* (yield* IdPrefixes).sessionsWithPrefix(typed, CANDIDATES + 1)
    if (found.includes(typed) || found.length === 0) return typed
    const [only] = found
    if (found.length === 1 && only !== undefined) return only
    const more = found.length > CANDIDATES ? ", …" : ""
    return yield* new CliFailure({
      message: `the session prefix "${typed}" is ambiguous: it matches ${found.slice(0, CANDIDATES).join(", ")}${more}; give more of the ID`,
      exitCode: 2
    })
  })

/*
 * When this directory has no controller database: the other databases in the same folder (the
 * extension keeps one file per project there), so the operator can pick one with `--db`.
 * Bounded: at most `SHOWN` names, the rest counted.
 */
export const SHOWN = 5

/** The project name the extension put in a file name (`<project>-<16 hex>.db`), if it has that shape. */
export const projectHint = (file: string): string | null => {
  const match = /^(.+)-[0-9a-f]{16}\.db$/.exec(file)
  return match?.[1] ?? null
}

/** The `*.db` files beside `path` (not `path` itself), sorted; empty when the folder cannot be read. */
export const databasesBeside = (path: string): ReadonlyArray<string> => {
  try {
    return readdirSync(dirname(path), { withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith(".db") && entry.name !== basename(path))
      .map((entry) => entry.name)
      .sort()
  } catch {
    return []
  }
}

/** The error line for a missing default database: where it looked and what is there instead. */
export const missingDatabase = (path: string, others: ReadonlyArray<string>): string => {
  const head = `no controller database at ${path} for this directory (Pi has not run a workflow in this project yet)`
  if (others.length === 0) return `${head}; pass --db PATH or set PI_WORKFLOWS_DB`
  const names = others.slice(0, SHOWN).map((file) => {
    const hint = projectHint(file)
    return hint === null ? file : `${file} (project ${hint})`
  })
  const rest = others.length > SHOWN ? ` and ${others.length - SHOWN} more` : ""
  const count = others.length === 1 ? "1 other database" : `${others.length} other databases`
  return `${head}; ${dirname(path)} has ${count}: ${names.join(", ")}${rest}; --db PATH picks one`
}
