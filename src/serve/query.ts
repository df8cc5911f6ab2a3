/**
 * The `serve` API's query parameters, parsed before anything is read: each route names the
 * parameters it takes (plus `token`), each value is bounded and checked, and anything else is a
 * `BadQuery` with a short message (a 400) that quotes at most a few characters of what was sent.
 * Pure.
 */
import { Data, Either, Schema } from "effect"
import { filterState, STATE_CHOICES, type ConditionState } from "../cli/run-states.ts"
import type { RunState } from "../store/run-store.ts"
import { MAX_PAGE, type IntentCursor } from "../store/timeline-reads.ts"
import { MAX_LIST_LIMIT } from "../store/turn-intent-store.ts"

export class BadQuery extends Data.TaggedError("BadQuery")<{ readonly message: string }> {}

/** The longest value taken (an ID is at most 512 characters; an intent cursor holds one and a time). */
const MAX_VALUE = 1_200
/** Rows of a timeline page when `limit` is not given. */
export const DEFAULT_PAGE = 200

const quoted = (value: string) => JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)

type Raw = Readonly<Record<string, string>>

/** The parameters as one value each, only the names `allowed` (and `token`). */
const only = (query: URLSearchParams, allowed: ReadonlyArray<string>): Either.Either<Raw, BadQuery> => {
  const raw: Record<string, string> = {}
  for (const [name, value] of query) {
    if (name !== "token" && !allowed.includes(name)) {
      return Either.left(new BadQuery({ message: `unknown parameter ${quoted(name)}` }))
    }
    if (name in raw) return Either.left(new BadQuery({ message: `parameter ${quoted(name)} given twice` }))
    if (value.length > MAX_VALUE)
      return Either.left(new BadQuery({ message: `parameter ${quoted(name)} is too long` }))
    raw[name] = value
  }
  return Either.right(raw)
}

const integer = (raw: Raw, name: string, min: number, max: number, fallback: number) => {
  const value = raw[name]
  if (value === undefined || value === "") return Either.right(fallback)
  const n = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN
  return Number.isSafeInteger(n) && n >= min && n <= max
    ? Either.right(n)
    : Either.left(
        new BadQuery({ message: `${name} must be an integer from ${min} to ${max}, got ${quoted(value)}` })
      )
}

const text = (raw: Raw, name: string): string | undefined => {
  const value = raw[name]?.trim()
  return value === undefined || value === "" ? undefined : value
}

const AGE = /^(\d{1,5})(m|h|d)$/
const UNIT = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** `30m`, `12h`, `7d`: milliseconds. */
export const ageMs = (value: string): number | null => {
  const match = AGE.exec(value)
  const unit = match?.[2]
  return match === null || (unit !== "m" && unit !== "h" && unit !== "d")
    ? null
    : Number(match[1]) * UNIT[unit]
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
    const limit = yield* integer(raw, "limit", 1, MAX_LIST_LIMIT, 50)
    const state = text(raw, "state")
    const parsed = state === undefined ? undefined : filterState(state)
    if (parsed === null) {
      return yield* Either.left(
        new BadQuery({
          message: `state must be one of ${STATE_CHOICES.join(", ")}, got ${quoted(state ?? "")}`
        })
      )
    }
    const age = text(raw, "age")
    const ms = age === undefined ? undefined : ageMs(age)
    if (ms === null) {
      return yield* Either.left(
        new BadQuery({ message: `age must be like 30m, 12h or 7d, got ${quoted(age ?? "")}` })
      )
    }
    const workflow = text(raw, "workflow")
    const session = text(raw, "session")
    return {
      limit,
      ...(parsed === undefined ? {} : { state: parsed }),
      ...(workflow === undefined ? {} : { workflow }),
      ...(session === undefined ? {} : { session }),
      ...(ms === undefined ? {} : { ageMs: ms })
    }
  })

const runId = (raw: Raw) => {
  const id = raw.id
  return id === undefined || id === "" || id.length > 512
    ? Either.left(new BadQuery({ message: "id must be a run ID (1 to 512 characters)" }))
    : Either.right(id)
}

/** `/api/run?id=…` */
export const runQuery = (query: URLSearchParams) => Either.flatMap(only(query, ["id"]), runId)

export interface PageQuery<C> {
  readonly runId: string
  readonly cursor: C
  readonly limit: number
}

/** A page after a sequence number (steps, events): `cursor` is the last one seen. */
export const seqPage = (query: URLSearchParams): Either.Either<PageQuery<number>, BadQuery> =>
  Either.gen(function* () {
    const raw = yield* only(query, ["id", "cursor", "limit"])
    return {
      runId: yield* runId(raw),
      cursor: yield* integer(raw, "cursor", 0, Number.MAX_SAFE_INTEGER, 0),
      limit: yield* integer(raw, "limit", 1, MAX_PAGE, DEFAULT_PAGE)
    }
  })

const decodeIntentCursor = Schema.decodeUnknownEither(
  Schema.parseJson(Schema.Tuple(Schema.String, Schema.String))
)

/** A page of intents after `cursor`, the last one seen as `[requestedAt, intentId]`. */
export const intentPage = (query: URLSearchParams): Either.Either<PageQuery<IntentCursor | null>, BadQuery> =>
  Either.gen(function* () {
    const raw = yield* only(query, ["id", "cursor", "limit"])
    const cursor = text(raw, "cursor")
    return {
      runId: yield* runId(raw),
      cursor:
        cursor === undefined
          ? null
          : yield* Either.mapLeft(
              decodeIntentCursor(cursor),
              () => new BadQuery({ message: `cursor must be one an intent page gave, got ${quoted(cursor)}` })
            ),
      limit: yield* integer(raw, "limit", 1, MAX_PAGE, DEFAULT_PAGE)
    }
  })
