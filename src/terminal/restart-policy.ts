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
 * Also what a restart records and how it is refused: the restart lineage (launch data) and the
 * typed refusals of `restart` and of a second launch in one terminal turn.
 */
import { Either, ParseResult, Schema } from "effect"
import type { RunRecord } from "../store/run-store.ts"
import {
  cancelledBy,
  REASON_KINDS,
  type ReasonKind,
  reasonKind,
  terminalFingerprint,
  terminalState
} from "./terminal-outcome.ts"

// Typed refusals of the `restart` action and of a second launch in one terminal turn.

export const RestartRefusal = Schema.Literal(
  "unknown",
  "active",
  "otherSession",
  "userCancelled",
  "agentCancelled",
  "sourceGone",
  "limit",
  "repeated",
  "alreadyRestarted"
)
export type RestartRefusal = typeof RestartRefusal.Type

/** `restart` was refused; nothing was written. `detail` says why in words the model can act on. */
export class RestartRefused extends Schema.TaggedError<RestartRefused>()("RestartRefused", {
  runId: Schema.String,
  reason: RestartRefusal,
  detail: Schema.String
}) {
  override get message() {
    return `cannot restart run ${this.runId}: ${this.detail}`
  }
}

/** The terminal turn already reserved its one launch (another tool call made it). */
export class LaunchAlreadyReserved extends Schema.TaggedError<LaunchAlreadyReserved>()(
  "LaunchAlreadyReserved",
  {
    terminalRunId: Schema.String,
    runId: Schema.String,
    kind: Schema.String
  }
) {
  override get message() {
    return (
      `this terminal turn (run ${this.terminalRunId}) already launched run ${this.runId} (${this.kind}); ` +
      "only one workflow launch is allowed per terminal turn. End the turn; the launched run starts after it."
    )
  }
}

// Restart lineage: what a restarted run records about the chain it belongs to, in its launch
// data (`workflow_run_launches.launch_json`). A run without launch data is the root of its own
// chain with no restarts. Decoding is strict, so stored text that does not match is an error,
// never a half-trusted value.

export const LAUNCH_SCHEMA = "pi-workflows.run-launch.v1"

/** At most this many restarts after the original run: four runs per chain. */
export const RESTART_LIMIT = 3

/** Longest outcome summary kept per earlier run of the chain. */
export const MAX_SUMMARY_CHARS = 300

const Id = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(512))

/** One earlier run of the chain as it ended (small and bounded). */
export const ChainOutcome = Schema.Struct({
  runId: Id,
  state: Schema.Literal("completed", "failed", "timed_out", "cancelled"),
  reasonKind: Schema.Literal(...(REASON_KINDS as [ReasonKind, ...ReasonKind[]])),
  fingerprint: Schema.String.pipe(Schema.maxLength(128)),
  summary: Schema.String.pipe(Schema.maxLength(MAX_SUMMARY_CHARS))
})
export type ChainOutcome = typeof ChainOutcome.Type

export const Lineage = Schema.Struct({
  rootRunId: Id,
  parentRunId: Id,
  restartNumber: Schema.Int.pipe(Schema.between(1, RESTART_LIMIT)),
  parentFingerprint: Schema.String.pipe(Schema.maxLength(128)),
  /** Every earlier run of the chain, root first; the last one is the parent. */
  earlier: Schema.Array(ChainOutcome).pipe(Schema.maxItems(RESTART_LIMIT))
})
export type Lineage = typeof Lineage.Type

/** How the run was launched: from a terminal turn's reservation, and its restart lineage. */
export const Launch = Schema.Struct({
  schema: Schema.Literal(LAUNCH_SCHEMA),
  kind: Schema.Literal("restart", "monitor", "start"),
  lineage: Schema.NullOr(Lineage)
})
export type Launch = typeof Launch.Type

const LaunchJson = Schema.parseJson(Launch)
const strict = { onExcessProperty: "error", errors: "all" } as const
const decodeEither = Schema.decodeUnknownEither(LaunchJson, strict)
const encodeSync = Schema.encodeSync(LaunchJson)

/** Stored text to launch data, or the reason it does not decode. */
export const decodeLaunch = (text: string): Either.Either<Launch, string> =>
  Either.mapLeft(decodeEither(text), (error) => ParseResult.TreeFormatter.formatErrorSync(error))

export const encodeLaunch = (launch: Launch): string => encodeSync(launch)

/** Restarts so far in the run's chain (0 for a run without lineage). */
export const restartCount = (lineage: Lineage | null): number => lineage?.restartNumber ?? 0

// The policy.

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
