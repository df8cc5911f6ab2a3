/**
 * The run states an operator filters on, shared by `runs --state` and the `serve` page's filter:
 * the stored states, and the conditions (domain/run-condition.ts) of runs stored `running` or
 * `waiting`. `waiting` is a run at a waiting checkpoint (not the stored state, which a held or
 * paused run also has: those are `held` and `paused`).
 */
import { Schema } from "effect"
import { RunState } from "../store/run-store.ts"
import { MAX_LIST_LIMIT } from "../store/turn-intent-store.ts"

export const CONDITION_STATES = ["waiting", "parked", "orphaned", "held", "paused"] as const
export type ConditionState = (typeof CONDITION_STATES)[number]
export const isConditionState = (value: string): value is ConditionState =>
  (CONDITION_STATES as ReadonlyArray<string>).includes(value)
export const isRunState = Schema.is(RunState)

/** The stored states filtered as stored. */
export const STORED_STATES = RunState.literals.filter((state) => !isConditionState(state))
export const STATE_CHOICES = [...new Set([...RunState.literals, ...CONDITION_STATES])]

/** The one stored state a condition is found in (listing only those rows), where there is one. */
export const STORED_FOR: Partial<Record<ConditionState, RunState>> = {
  waiting: "waiting",
  paused: "waiting",
  parked: "running",
  orphaned: "running"
}

/** A filter value: a stored state or a condition; null when it is neither. */
export const filterState = (value: string): RunState | ConditionState | null =>
  isRunState(value) || isConditionState(value) ? value : null

/**
 * How a listing applies a filter value: the stored state to list (a condition's own, where it
 * has one), and for a condition, which is decided per run (claim expiry against now), the newest
 * MAX_LIST_LIMIT rows to keep those of that condition from.
 */
export interface Listing {
  readonly stored: RunState | undefined
  readonly condition: ConditionState | undefined
  readonly listLimit: number
}

export const listingFor = (state: RunState | ConditionState | undefined, limit: number): Listing =>
  state === undefined
    ? { stored: undefined, condition: undefined, listLimit: limit }
    : isConditionState(state)
      ? { stored: STORED_FOR[state], condition: state, listLimit: MAX_LIST_LIMIT }
      : { stored: state, condition: undefined, listLimit: limit }

/** The listed rows a listing keeps: all of them, or the first `limit` of its condition. */
export const keptBy = <A>(
  listing: Listing,
  rows: ReadonlyArray<A>,
  kindOf: (row: A) => string,
  limit: number
): ReadonlyArray<A> =>
  listing.condition === undefined
    ? rows
    : rows.filter((row) => kindOf(row) === listing.condition).slice(0, limit)
