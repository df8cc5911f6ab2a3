/**
 * The run states an operator filters on, shared by `runs --state` and the `serve` page's filter:
 * the stored states, and the conditions (domain/run-condition.ts) of runs stored `running` or
 * `waiting`. `waiting` is a run at a waiting checkpoint (not the stored state, which a held or
 * paused run also has: those are `held` and `paused`).
 */
import { Schema } from "effect"
import { RunState } from "../store/run-store.ts"

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
