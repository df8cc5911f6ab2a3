/**
 * Numbers the store section prints next to this run's, produced elsewhere: the reference
 * implementation from perf-anchors.md and the layer's own results before the fast path.
 */
import type { OpName } from "./sql.ts"

/**
 * perf-anchors.md: a reference implementation of the same store (synchronous better-sqlite3,
 * one statement prepared per call, synchronous=FULL) and its raw floor, measured on this machine
 * kind, µs. Facts for comparison, not produced by this run.
 */
export const ANCHORS: Record<
  OpName,
  {
    readonly label: string
    readonly reference: string
    readonly floorFull: string
    readonly floorNormal: string
  }
> = {
  ensure: { label: "ensure (new intent)", reference: "216 / 634", floorFull: "136 / 285", floorNormal: "30" },
  get: { label: "(no anchor)", reference: "—", floorFull: "—", floorNormal: "—" },
  list: {
    label: "find pending for run + session",
    reference: "27.8 / 64",
    floorFull: "4.4 / 7.3",
    floorNormal: "4.3"
  },
  claimForRun: {
    label: "claim one intent",
    reference: "159 / 281",
    floorFull: "101 / 175",
    floorNormal: "12.4"
  },
  release: { label: "release", reference: "114 / 187", floorFull: "97 / 143", floorNormal: "8.7" },
  makeEligible: {
    label: "make eligible",
    reference: "136 / 275",
    floorFull: "105 / 185",
    floorNormal: "12.9"
  },
  claimEligibleForSession: {
    label: "claim eligible for a session (1 eligible, 5.5k rows)",
    reference: "515 / 704",
    floorFull: "113 / 251",
    floorNormal: "—"
  },
  resolve: {
    label: "resolve (after claim)",
    reference: "170 / 340",
    floorFull: "118 / 200",
    floorNormal: "18.8"
  }
}

/**
 * The layer before the fast path (commit 022c026: every query through @effect/sql, Schema row
 * decoding, Effect.gen checks), from its bench run on 2026-11-30 on this machine: µs median /
 * p99 and the ratio to that run's raw floor. Kept for comparison; not produced by this run.
 */
export const PREVIOUS: Record<OpName, string> = {
  ensure: "70.0 / 1405 (3.33×)",
  get: "—",
  list: "45.3 / 140 (3.79×)",
  claimForRun: "45.1 / 144 (3.90×)",
  release: "26.1 / 70.5 (2.76×)",
  makeEligible: "50.2 / 392 (3.47×)",
  claimEligibleForSession: "72.8 / 274 (2.49×)",
  resolve: "53.3 / 475 (2.96×)"
}
