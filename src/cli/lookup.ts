/**
 * An ID as the operator typed it: a whole intent or run ID, or a unique prefix of one (a short ID
 * from a table). Exact IDs are read by the stores; prefixes by one bounded query per table
 * (`substr`, the same on SQLite and PostgreSQL), at most `CANDIDATES + 1` rows each.
 */
import { Effect, Option } from "effect"
import { RunStore } from "../store/run-store.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { CliFailure } from "./failure.ts"
import { IdPrefixes } from "../store/id-prefixes.ts"
import { intentPrefixesOf } from "./short-ids.ts"

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
