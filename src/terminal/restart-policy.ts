/**
 * The restart policy: may this terminal run be restarted, and with which lineage. Pure; the
 * caller reads the run, its launch data and the loaded workflow, and writes nothing when the
 * answer is a refusal.
 *
 * Rules: only a run of this session that ended; never a run that was explicitly cancelled (by
 * the user or the agent: cancelled means stopped, and a fresh `start` stays possible); only while the
 * exact workflow source and revision are still loaded; at most `RESTART_LIMIT` restarts per
 * chain; and never after an ending that already happened earlier in the chain (the same
 * fingerprint means the restart made no difference). A different ending is progress and keeps
 * the chain eligible until the limit. Starting Monitor or another workflow is not a restart and
 * is not counted here.
 *
 * What a restart records (the lineage) and its refusals are the LaunchStore's record types
 * (`store/launch-store.ts`).
 */
import { Either } from "effect"
import {
  type ChainOutcome,
  type Lineage,
  MAX_SUMMARY_CHARS,
  RESTART_LIMIT,
  RestartRefused,
  restartCount
} from "../store/launch-store.ts"
import type { RunRecord } from "../store/run-store.ts"
import { cancelledBy, reasonKind, terminalFingerprint, terminalState } from "./terminal-outcome.ts"

export interface RestartCandidate {
  readonly run: RunRecord
  /** The run's own lineage (null: it is the root of its chain). */
  readonly lineage: Lineage | null
  /** The session asking. */
  readonly sessionId: string
  /** The workflow as loaded now, or null when no workflow of that name is loaded. */
  readonly loaded: { readonly revision: number | null; readonly fingerprint: string } | null
  /** A run that already restarted this one, if any. */
  readonly restartedAs: string | null
}

const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

/** One line that says how a run ended, for the chain history. */
export const outcomeSummary = (run: RunRecord): string => {
  if (run.error !== null) return clip(run.error.message, MAX_SUMMARY_CHARS)
  const result = run.result._tag === "Some" ? JSON.stringify(run.result.value) : undefined
  return clip(result === undefined ? run.state : `result ${result}`, MAX_SUMMARY_CHARS)
}

/** The run's own entry in a chain history (null while it has not ended). */
export const chainOutcome = (run: RunRecord): ChainOutcome | null => {
  const state = terminalState(run)
  const kind = reasonKind(run)
  if (state === null || kind === null) return null
  return {
    runId: run.runId,
    state,
    reasonKind: kind,
    fingerprint: terminalFingerprint(run),
    summary: outcomeSummary(run)
  }
}

/** ` (revision 3 → 4)` when either side has a revision; nothing when neither does. */
const revisionChange = (was: number | null, now: number | null): string =>
  was === null && now === null ? "" : ` (revision ${was ?? "unset"} → ${now ?? "unset"})`

/** The lineage a restart of `candidate.run` gets, or why it may not be restarted. */
export const decideRestart = (candidate: RestartCandidate): Either.Either<Lineage, RestartRefused> => {
  const { run, lineage } = candidate
  const refuse = (reason: RestartRefused["reason"], detail: string) =>
    Either.left(new RestartRefused({ runId: run.runId, reason, detail }))
  if (run.targetSessionId !== candidate.sessionId) {
    return refuse("otherSession", "the run belongs to another Pi session")
  }
  const outcome = chainOutcome(run)
  if (outcome === null) {
    return refuse(
      "active",
      `the run is ${run.state}, not ended; restart applies only to a run that has ended (use status, or cancel it first)`
    )
  }
  // Decided from the stored end facts (who ended the run, `end_by`), never the error text.
  const by = cancelledBy(run)
  if (by !== null) {
    const fresh = `a fresh \`start\` of workflow "${run.workflowName}" is still possible if the user asks for the work again`
    return by === "user"
      ? refuse(
          "userCancelled",
          `the user cancelled this run; cancelled means stopped, so it is not restarted; ${fresh}`
        )
      : refuse(
          "agentCancelled",
          `the agent cancelled this run; cancelled means stopped, so it is not restarted; ${fresh}`
        )
  }
  if (candidate.restartedAs !== null) {
    return refuse(
      "alreadyRestarted",
      `it was already restarted as run ${candidate.restartedAs}; restart that run's chain from its newest run instead`
    )
  }
  if (candidate.loaded === null) {
    return refuse("sourceGone", `workflow "${run.workflowName}" is no longer loaded`)
  }
  if (candidate.loaded.revision !== run.revision || candidate.loaded.fingerprint !== run.sourceFingerprint) {
    return refuse(
      "sourceGone",
      `workflow "${run.workflowName}" changed since this run${revisionChange(run.revision, candidate.loaded.revision)}; ` +
        "start a new run instead if the user wants one"
    )
  }
  const restarts = restartCount(lineage)
  if (restarts >= RESTART_LIMIT) {
    return refuse("limit", `the chain already has ${restarts} of ${RESTART_LIMIT} restarts`)
  }
  const earlier = lineage?.earlier ?? []
  const repeat = earlier.find((previous) => previous.fingerprint === outcome.fingerprint)
  if (repeat !== undefined) {
    return refuse(
      "repeated",
      `it ended exactly as earlier run ${repeat.runId} of the same chain (${outcome.reasonKind}); ` +
        "restarting again would repeat the same failure"
    )
  }
  return Either.right({
    rootRunId: lineage?.rootRunId ?? run.runId,
    parentRunId: run.runId,
    restartNumber: restarts + 1,
    parentFingerprint: outcome.fingerprint,
    earlier: [...earlier, outcome]
  })
}
