/**
 * The API's query parameters, checked before anything is read: each route takes only its own
 * names (and `token`), once each, every value bounded; anything else is a BadQuery (a 400) with
 * a short message quoting at most 24 characters of what was sent. Pure.
 */
import { Data, Either, Schema } from "effect"
import { type ConditionState, filterState, STATE_CHOICES } from "../cli/run-states.ts"
import type { RunState } from "../store/run-store.ts"
import { type IntentCursor, MAX_PAGE } from "../store/timeline-reads.ts"
import { MAX_LIST_LIMIT } from "../store/turn-intent-store.ts"

export class BadQuery extends Data.TaggedError("BadQuery")<{ readonly message: string }> {}

/** Rows of a timeline page when no `limit` is given. */
export const DEFAULT_PAGE = 200

const quoted = (value: string) => JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)
const bad = (message: string) => Either.left(new BadQuery({ message }))

type Raw = Readonly<Record<string, string | undefined>>

/** The parameters by name: only `names` (and `token`), each once, at most 1,200 characters. */
const only = (query: URLSearchParams, names: ReadonlyArray<string>): Either.Either<Raw, BadQuery> => {
  const raw: Record<string, string> = {}
  for (const [name, value] of query) {
    if (name !== "token" && !names.includes(name)) return bad(`unknown parameter ${quoted(name)}`)
    if (name in raw) return bad(`parameter ${quoted(name)} given twice`)
    if (value.length > 1_200) return bad(`parameter ${quoted(name)} is too long`)
    raw[name] = value.trim()
  }
  return Either.right(raw)
}

const integer = (raw: Raw, name: string, max: number, fallback: number, min = 1) => {
  const value = raw[name] ?? ""
  const n = /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN
  if (value === "") return Either.right(fallback)
  return Number.isSafeInteger(n) && n >= min && n <= max
    ? Either.right(n)
    : bad(`${name} must be an integer from ${min} to ${max}, got ${quoted(value)}`)
}

const given = (value: string | undefined) => (value === undefined || value === "" ? undefined : value)

/** `30m`, `12h`, `7d` in milliseconds; null for anything else. */
export const ageMs = (value: string): number | null => {
  const match = /^(\d{1,5})([mhd])$/.exec(value)
  return match === null
    ? null
    : Number(match[1]) * (match[2] === "m" ? 60_000 : match[2] === "h" ? 3_600_000 : 86_400_000)
}

export interface RunsQuery {
  readonly state?: RunState | ConditionState
  readonly workflow?: string
  readonly session?: string
  readonly ageMs?: number
  readonly limit: number
}

export const runsQuery = (query: URLSearchParams): Either.Either<RunsQuery, BadQuery> =>
  Either.gen(function* () {
    const raw = yield* only(query, ["state", "workflow", "session", "age", "limit"])
    const limit = yield* integer(raw, "limit", MAX_LIST_LIMIT, 50)
    const [state, age, workflow, session] = [
      given(raw.state),
      given(raw.age),
      given(raw.workflow),
      given(raw.session)
    ]
    const filter = state === undefined ? undefined : filterState(state)
    if (filter === null)
      return yield* bad(`state must be one of ${STATE_CHOICES.join(", ")}, got ${quoted(state ?? "")}`)
    const ms = age === undefined ? undefined : ageMs(age)
    if (ms === null) return yield* bad(`age must be like 30m, 12h or 7d, got ${quoted(age ?? "")}`)
    return {
      limit,
      ...(filter === undefined ? {} : { state: filter }),
      ...(workflow === undefined ? {} : { workflow }),
      ...(session === undefined ? {} : { session }),
      ...(ms === undefined ? {} : { ageMs: ms })
    }
  })

const runId = (raw: Raw) => {
  const id = raw.id ?? ""
  return id === "" || id.length > 512 ? bad("id must be a run ID (1 to 512 characters)") : Either.right(id)
}

/** `/api/run?id=…` */
export const runQuery = (query: URLSearchParams) => Either.flatMap(only(query, ["id"]), runId)

export interface PageQuery<C> {
  readonly runId: string
  readonly cursor: C
  readonly limit: number
}

/** Steps and events: the page after `cursor`, the last sequence number seen. */
export const seqPage = (query: URLSearchParams): Either.Either<PageQuery<number>, BadQuery> =>
  Either.gen(function* () {
    const raw = yield* only(query, ["id", "cursor", "limit"])
    return {
      runId: yield* runId(raw),
      cursor: yield* integer(raw, "cursor", Number.MAX_SAFE_INTEGER, 0, 0),
      limit: yield* integer(raw, "limit", MAX_PAGE, DEFAULT_PAGE)
    }
  })

const decodeCursor = Schema.decodeUnknownEither(Schema.parseJson(Schema.Tuple(Schema.String, Schema.String)))

/** Intents: the page after `cursor`, the last one seen as `[requestedAt, intentId]`. */
export const intentPage = (query: URLSearchParams): Either.Either<PageQuery<IntentCursor | null>, BadQuery> =>
  Either.gen(function* () {
    const raw = yield* only(query, ["id", "cursor", "limit"])
    const cursor = given(raw.cursor)
    return {
      runId: yield* runId(raw),
      cursor:
        cursor === undefined
          ? null
          : yield* Either.mapLeft(
              decodeCursor(cursor),
              () => new BadQuery({ message: `cursor must be one an intent page gave, got ${quoted(cursor)}` })
            ),
      limit: yield* integer(raw, "limit", MAX_PAGE, DEFAULT_PAGE)
    }
  })
