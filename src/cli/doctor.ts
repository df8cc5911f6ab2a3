/**
 * `doctor`: health checks over what the stores hold, explained in plain words. Pure: the
 * caller reads the database (read-only) and passes the records and the current time.
 */
import { LegacyLaunchNotifications } from "../store/store-errors.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import type { RunRecord } from "../store/run-store.ts"
import type { WaitRecord } from "../store/run-waits.ts"
import { duration, relative } from "../domain/text.ts"
import { conditionLabel, isStalled, type RunCondition, runCondition } from "../domain/run-condition.ts"
import { questionLine } from "./waits.ts"

export interface DoctorInput {
  readonly databasePath: string
  readonly now: number
  /** A pending, not yet eligible intent older than this has probably lost its owner. */
  readonly staleMs: number
  /** Undelivered `launch_failure` rows of the earlier alpha notifications table. */
  readonly legacyPending: number
  /** Pending (unresolved) intents. */
  readonly pending: ReadonlyArray<TurnIntent>
  /** A run parked or orphaned (domain/run-condition.ts) for longer than this has stalled. */
  readonly staleRunMs: number
  /** Runs in state `running`. */
  readonly running: ReadonlyArray<RunRecord>
  /**
   * Runs in state `waiting` (at a checkpoint, held or paused) and the open waits: a run that has
   * waited at a checkpoint longer than `staleRunMs` is listed as a long wait (not a failure).
   */
  readonly waiting: ReadonlyArray<RunRecord>
  readonly waits: ReadonlyArray<WaitRecord>
  /**
   * Runs the user cancelled directly: their pending intents are retired (never eligible, owed to
   * nobody), which is their final state, not a stranding.
   */
  readonly retiredRuns: ReadonlySet<string>
}

export interface Finding {
  readonly check:
    | "legacyLaunchFailures"
    | "staleIntents"
    | "expiredIntentClaims"
    | "stalledRuns"
    | "longWaits"
  readonly healthy: boolean
  /**
   * The word shown instead of `ok` for a healthy finding that still lists records (`waiting`:
   * long waits need someone to answer, but are no failure).
   */
  readonly label?: string
  /** One plain sentence: what was found, and what to do about it. */
  readonly summary: string
  /** One line per affected record. */
  readonly items: ReadonlyArray<string>
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`
/** The verb that agrees with `count` things: `is`/`are`, `carries`/`carry`. */
const agree = (count: number, one: string, many: string) => (count === 1 ? one : many)

const legacy = (input: DoctorInput): Finding =>
  input.legacyPending === 0
    ? {
        check: "legacyLaunchFailures",
        healthy: true,
        summary: "no legacy launch_failure notifications",
        items: []
      }
    : {
        check: "legacyLaunchFailures",
        healthy: false,
        // The store's own refusal text carries the exact reset instruction; doctor never deletes.
        summary: new LegacyLaunchNotifications({
          databasePath: input.databasePath,
          pending: input.legacyPending
        }).message,
        items: []
      }

const stale = (input: DoctorInput): Finding => {
  const found = input.pending.filter(
    (intent) =>
      intent.eligibleAt === null &&
      intent.deliveryClaimToken === null &&
      !input.retiredRuns.has(intent.runId) &&
      input.now - Date.parse(intent.requestedAt) > input.staleMs
  )
  return found.length === 0
    ? {
        check: "staleIntents",
        healthy: true,
        summary: `no turn intent has waited more than ${duration(input.staleMs)} without becoming eligible`,
        items: []
      }
    : {
        check: "staleIntents",
        healthy: false,
        summary:
          `${plural(found.length, "turn intent")} waited more than ${duration(input.staleMs)} for a natural ` +
          "successor and never became fallback-eligible: the Pi process that owned the run has probably gone. " +
          "Open the session again in Pi; the extension recovers the run at session start and the model gets its turn.",
        items: found.map(
          (intent) =>
            `${intent.intentId}: run ${intent.runId}, ${intent.cause} at ${intent.nodeId ?? "-"}, ` +
            `session ${intent.targetSessionId}, requested ${relative(input.now, intent.requestedAt)}`
        )
      }
}

const expiredClaims = (input: DoctorInput): Finding => {
  const found = input.pending.filter(
    (intent) => intent.deliveryClaimToken !== null && (intent.deliveryClaimExpiresAt ?? 0) <= input.now
  )
  return found.length === 0
    ? { check: "expiredIntentClaims", healthy: true, summary: "no delivery claim has expired", items: [] }
    : {
        check: "expiredIntentClaims",
        healthy: false,
        summary:
          `${plural(found.length, "turn intent")} still ${agree(found.length, "carries", "carry")} a delivery claim whose lease expired: the deliverer ` +
          "stopped mid-delivery. The next fallback pass in that session takes them over; open the session in Pi.",
        items: found.map(
          (intent) =>
            `${intent.intentId}: run ${intent.runId}, claim ${intent.deliveryClaimToken ?? "-"} expired ` +
            `${relative(input.now, intent.deliveryClaimExpiresAt)}, session ${intent.targetSessionId}`
        )
      }
}

/** Since when a stalled run has not moved (epoch ms): its lease's end, else its last write. */
const stalledSince = (run: RunRecord, condition: RunCondition): number =>
  condition._tag === "Orphaned" && run.claimExpiresAt !== null
    ? run.claimExpiresAt
    : Date.parse(run.updatedAt)

/** The exact commands that bring a stalled run back, for its item line. */
export const recoveryCommands = (run: RunRecord): string =>
  `recover: pi --session ${run.targetSessionId} in the project directory (session start continues the run), ` +
  `or type /workflow resume ${run.runId} in Pi there`

const stalled = (input: DoctorInput): Finding => {
  const found = input.running.flatMap((run) => {
    const condition = runCondition(run, input.now)
    if (!isStalled(condition)) return []
    const since = stalledSince(run, condition)
    return input.now - since > input.staleRunMs ? [{ run, condition, since }] : []
  })
  return found.length === 0
    ? {
        check: "stalledRuns",
        healthy: true,
        summary: `no run has been parked or orphaned for more than ${duration(input.staleRunMs)}`,
        items: []
      }
    : {
        check: "stalledRuns",
        healthy: false,
        summary:
          `${plural(found.length, "run")} ${agree(found.length, "has", "have")} been parked or orphaned for more than ` +
          `${duration(input.staleRunMs)}: stored as running, but no live Pi session drives ${agree(found.length, "it", "them")}. ` +
          "Reopen the owning session in the project (or resume the run in Pi there) to continue.",
        items: found.map(
          ({ run, condition, since }) =>
            `${run.runId}: ${run.workflowName} at ${run.currentNodeId ?? "-"}, ${conditionLabel(condition)} ` +
            `since ${relative(input.now, since)}, session ${run.targetSessionId}; ${recoveryCommands(run)}`
        )
      }
}

/** A wait's deadline for its item line: none, to come, or passed (expired by its session's Pi). */
const deadlineNote = (now: number, wait: WaitRecord): string => {
  if (wait.deadlineAt === null) return "no deadline"
  const at = new Date(wait.deadlineAt).toISOString()
  return wait.deadlineAt > now
    ? `deadline ${at} (${relative(now, wait.deadlineAt)})`
    : `deadline ${at} passed ${relative(now, wait.deadlineAt)} (its timeout route runs once its session is open in Pi)`
}

const longWaits = (input: DoctorInput): Finding => {
  const open = new Map(input.waits.map((wait) => [wait.requestId, wait]))
  const found = input.waiting.flatMap((run) => {
    const wait = run.waitRequestId === null ? undefined : open.get(run.waitRequestId)
    if (wait === undefined) return []
    return input.now - Date.parse(wait.since) > input.staleRunMs ? [{ run, wait }] : []
  })
  const limit = duration(input.staleRunMs)
  return found.length === 0
    ? {
        check: "longWaits",
        healthy: true,
        summary: `no run has waited for an answer for more than ${limit}`,
        items: []
      }
    : {
        check: "longWaits",
        healthy: true,
        label: "waiting",
        summary:
          `${plural(found.length, "run")} ${agree(found.length, "has", "have")} waited for an answer for more than ${limit} ` +
          `at a waiting checkpoint: no failure, ${agree(found.length, "it waits", "each waits")} until someone answers ` +
          "(or its deadline passes). Answer in the run's session with /workflow answer <runId> <text>, or stop it there " +
          "with /workflow cancel.",
        items: found.map(
          ({ run, wait }) =>
            `${run.runId}: ${run.workflowName} at ${wait.nodeId}, waiting for an answer since ` +
            `${relative(input.now, wait.since)} (request ${wait.requestId}), ${deadlineNote(input.now, wait)}, ` +
            `session ${run.targetSessionId}; asks: ${questionLine(wait.prompt, 60)}; ` +
            `answer: pi --session ${run.targetSessionId}, then /workflow answer ${run.runId} <text>`
        )
      }
}

export const diagnose = (input: DoctorInput): ReadonlyArray<Finding> => [
  legacy(input),
  stale(input),
  expiredClaims(input),
  stalled(input),
  longWaits(input)
]

export const healthy = (findings: ReadonlyArray<Finding>): boolean => findings.every((f) => f.healthy)
