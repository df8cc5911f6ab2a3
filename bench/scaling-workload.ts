/**
 * The claim-cost-vs-history workload both backends' scaling benches time: a fixed set of target
 * sessions and runs (re-claims by the same claimant are idempotent, so one set serves every
 * call), the claims timed on each, and the row count each must touch.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import type { TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { LEASE_MS } from "./fixtures.ts"

export const TARGETS = 100
export const OTHER_PENDING = 1_000
/** The most a claim may slow down from the smallest history to the largest. */
export const GROWTH_LIMIT = 1.5

export type ScaleOp = "syncPass" | "claimEligibleForSession" | "claimForRun"
export const SCALE_OPS: ReadonlyArray<ScaleOp> = ["syncPass", "claimEligibleForSession", "claimForRun"]
/** Expected row count per call, so a broken setup cannot time no-ops. */
const EXPECTED: Record<ScaleOp, number> = { syncPass: 0, claimEligibleForSession: 1, claimForRun: 1 }

export const checkCount = (op: ScaleOp, count: number) => {
  if (count !== EXPECTED[op]) throw new Error(`scaling ${op}: expected ${EXPECTED[op]} rows, got ${count}`)
}

export const idFor = (tag: string) => `deferred-turn:${createHash("sha256").update(tag).digest("hex")}`

/** The keys of the k-th target of each kind. */
export const target = {
  idle: (k: number) => ({ session: `idle-session-${k}`, run: `idle-run-${k}` }),
  eligible: (k: number) => ({ session: `eligible-session-${k}`, run: `eligible-run-${k}` }),
  claim: (k: number) => ({ session: `claim-session-${k}`, run: `claim-run-${k}` })
}

export const token = (k: number) => `scaling-token-${k}`

/** One timed call through the layer; the number of rows it touched. */
export const layerCall = (store: TurnIntentStoreService, op: ScaleOp, k: number) =>
  op === "claimForRun"
    ? Effect.map(
        store.claimForRun({
          runId: target.claim(k).run,
          targetSessionId: target.claim(k).session,
          token: token(k),
          leaseMs: LEASE_MS
        }),
        (claimed) => (claimed._tag === "Some" ? 1 : 0)
      )
    : Effect.map(
        store.claimEligibleForSession({
          targetSessionId: (op === "syncPass" ? target.idle : target.eligible)(k).session,
          token: token(k),
          leaseMs: LEASE_MS,
          limit: 10
        }),
        (rows) => rows.length
      )
