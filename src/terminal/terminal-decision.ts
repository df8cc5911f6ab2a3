/**
 * The terminal decision: what the model is told once a top-level run has ended, built from the
 * stored run and its lineage only. It states the facts (workflow and revision, run, exact input,
 * bounded result or error, terminal state and reason kind, restart count, earlier outcomes of
 * the chain) and asks the model to decide with the conversation it already has. Nothing here
 * reads, copies, hashes or stores a user message. `terminalDecision` is pure.
 *
 * Below it, the messages that carry the decision: the fallback composer and the Coordinator
 * decorator for presentations (`layerComposer`, `layerCoordinator`).
 */
import { createHash } from "node:crypto"
import { Effect, Layer, Option } from "effect"
import { Coordinator, type CoordinatorService, FallbackComposer } from "../delivery/coordinator.ts"
import { fallbackMessage } from "../delivery/fallback.ts"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints, codePointLength, fitsCodePoints } from "../domain/text.ts"
import { PRESENTATION_TYPE } from "../domain/message-types.ts"
import type { CustomMessage } from "../session/pi-session.ts"
import { type RunRecord, RunStore } from "../store/run-store.ts"
import {
  LaunchStore,
  type Lineage,
  type ReasonKind,
  RESTART_LIMIT,
  restartCount
} from "../store/launch-store.ts"
import { decideRestart } from "./restart-policy.ts"
import { reasonKind, terminalState } from "./terminal-outcome.ts"

/**
 * Bounds, in characters (Unicode code points); the facts lines are always kept. The input is
 * shown in full when its JSON text has at most MAX_INPUT_CHARS characters, otherwise named by
 * size and SHA-256 digest (never cut); results and errors are clipped with a marker.
 */
export const MAX_INPUT_CHARS = 65_536
export const MAX_RESULT_CHARS = 8_000
const MAX_CARD_FIELD = 200

/** Small, bounded card fields the TUI renderer reads (never parsed from the prompt). */
export interface TerminalCard {
  readonly workflowName: string
  readonly observedState: string
  readonly runId: string
  readonly reasonKind: ReasonKind
  readonly restartCount: number
  readonly restartLimit: number
}

export interface TerminalDecision {
  readonly card: TerminalCard
  /** The decision block the model reads. */
  readonly text: string
  /** Whether `restart` would be accepted for this run right now (given the same loaded source). */
  readonly restartable: boolean
}

// Redacted before clipping: a cut could leave a secret too short for its pattern.
const clip = (text: string, max: number) => clipCodePoints(redactText(text), max, " …[truncated]")

const json = (value: unknown) => JSON.stringify(value, null, 2) ?? "null"

const REASON_TEXT: Record<ReasonKind, string> = {
  completed: "the workflow reached its last step",
  failed: "a step failed",
  maxSteps: "the run used up its step budget (maxSteps)",
  timedOut: "a step reached its time limit",
  agentCancelled: "the agent cancelled the run",
  userCancelled: "the user cancelled the run",
  launchFailed: "the queued run could not start",
  controllerInterrupted: "the workflow controller stopped the run"
}

/**
 * The input block: the exact input (pretty JSON when that fits the bound, else compact), or,
 * when even the compact JSON text is longer, its size and digest. Credentials are redacted in
 * what is shown; the stored input stays exact and `restart` uses it unchanged.
 */
const inputLines = (input: unknown): ReadonlyArray<string> => {
  const compact = JSON.stringify(input) ?? "null"
  if (!fitsCodePoints(compact, MAX_INPUT_CHARS)) {
    const digest = createHash("sha256").update(compact, "utf8").digest("hex")
    return [
      `Input: input of ${codePointLength(compact)} characters, sha256 ${digest}; not shown (more than ` +
        `${MAX_INPUT_CHARS} characters of JSON). The stored input is exact; restart uses it unchanged.`
    ]
  }
  const pretty = json(input)
  return ["Input (exact):", redactText(fitsCodePoints(pretty, MAX_INPUT_CHARS) ? pretty : compact)]
}

/** What the model should lean towards for this ending (never a command). */
const defaultAdvice = (kind: ReasonKind, restartable: boolean, runId: string): string => {
  const restart = `{"action": "restart", "runId": "${runId}"}`
  switch (kind) {
    case "completed":
      return (
        "Default: stop. The workflow completed; restart only if its result itself shows the work is " +
        `unfinished for a technical or temporary reason${restartable ? ` (${restart})` : ""}.`
      )
    case "userCancelled":
      return "Default: stop. The user cancelled this run; do not restart or replace it unless the user asks."
    case "agentCancelled":
      // Cancelled means stopped: never advise a restart of a run the agent chose to end.
      return (
        "Default: stop. The agent cancelled this run; stop here unless the conversation says otherwise " +
        "(then start a fresh run rather than restarting this one)."
      )
    default:
      return restartable
        ? `Default: if the task is unfinished because of a technical or temporary problem, prefer one safe restart with the workflow tool: ${restart}.`
        : "Restart is not available for this run (see below); stop or ask the user."
  }
}

const refusalLine = (run: RunRecord, lineage: Lineage | null, sessionId: string): string | null => {
  // Judged against the run's own source: whether that source is still loaded is checked at restart.
  const decided = decideRestart({
    run,
    lineage,
    sessionId,
    loaded: { revision: run.revision, fingerprint: run.sourceFingerprint },
    restartedAs: null
  })
  return decided._tag === "Left" ? decided.left.detail : null
}

/** Build the terminal decision for a run that has ended; null while it has not. */
export const terminalDecision = (run: RunRecord, lineage: Lineage | null): TerminalDecision | null => {
  const state = terminalState(run)
  const kind = reasonKind(run)
  if (state === null || kind === null) return null
  const refusal = refusalLine(run, lineage, run.targetSessionId)
  const restartable = refusal === null
  const restarts = restartCount(lineage)
  const lines = [
    `Workflow run ended: "${run.workflowName}"${run.revision === null ? "" : ` (revision ${run.revision})`}, run ${run.runId}.`,
    `- terminal state: ${state}`,
    `- reason: ${kind} (${REASON_TEXT[kind]})`
  ]
  if (run.error !== null) {
    lines.push(`- error: ${clip(run.error.message, MAX_RESULT_CHARS)}`)
    if (run.error.nodeId !== null) lines.push(`- at node: ${run.error.nodeId}`)
  }
  lines.push(
    `- restarts: ${restarts} of ${RESTART_LIMIT}` +
      (lineage === null ? "" : ` (chain root ${lineage.rootRunId}, restarted from ${lineage.parentRunId})`),
    "",
    ...inputLines(run.input)
  )
  if (Option.isSome(run.result)) lines.push("", "Result:", clip(json(run.result.value), MAX_RESULT_CHARS))
  if (lineage !== null && lineage.earlier.length > 0) {
    lines.push("", "Earlier runs of this restart chain:")
    for (const previous of lineage.earlier) {
      lines.push(
        `- run ${previous.runId}: ${previous.state} (${previous.reasonKind}): ${redactText(previous.summary)}`
      )
    }
  }
  lines.push(
    "",
    "Decide what happens next. The run ending does not show that the user's task is done: use the " +
      "conversation so far and this result. Stop when the work is complete, the user cancelled it, " +
      "new authority or a decision from the user is needed, or the same failure keeps repeating. " +
      "When the work is unfinished only because of a technical or temporary failure, a safe restart " +
      "is preferred. Use Monitor only for an external wait the user authorized.",
    defaultAdvice(kind, restartable, run.runId)
  )
  if (refusal !== null) lines.push(`Restart is not possible: ${refusal}.`)
  lines.push(
    "You may launch at most one workflow in this turn (restart, monitor or another start); it begins " +
      "after this turn ends. A second launch is refused."
  )
  return {
    card: {
      workflowName: clip(run.workflowName, MAX_CARD_FIELD),
      observedState: state,
      runId: clip(run.runId, MAX_CARD_FIELD),
      reasonKind: kind,
      restartCount: restarts,
      restartLimit: RESTART_LIMIT
    },
    // Every field above is redacted already; the whole block once more, for the lines between.
    text: redactText(lines.join("\n")),
    restartable
  }
}

// The terminal decision inside the messages that end a run's story: the presentation of a
// completed run (natural delivery) and the fallback for a run that ended otherwise. Both get
// the same decision block and the same small card fields in `details`
// (`workflowName, observedState, runId, reasonKind, restartCount, restartLimit`). The block is
// built from the stored run and its launch data, which never change once the run has ended, so
// a retried delivery composes the very same message. Reading them can fail; then the message
// goes out without the block rather than not at all.

/** The decision for a run that has ended, or none (still active, unknown, or unreadable). */
export const decisionFor = (runId: string) =>
  Effect.gen(function* () {
    const run = yield* (yield* RunStore).get(runId)
    if (Option.isNone(run)) return Option.none<TerminalDecision>()
    const launch = yield* (yield* LaunchStore).get(runId)
    const lineage = Option.match(launch, { onNone: () => null, onSome: (found) => found.launch.lineage })
    return Option.fromNullable(terminalDecision(run.value, lineage))
  }).pipe(
    Effect.catchAll((error) =>
      Effect.as(
        Effect.logWarning(`terminal decision for run ${runId} unavailable: ${error.message}`),
        Option.none<TerminalDecision>()
      )
    )
  )

/** The message with the decision block appended and the card fields in its details. */
export const withDecision = (message: CustomMessage, decision: TerminalDecision): CustomMessage => ({
  ...message,
  content: `${message.content}\n\n---\n${decision.text}`,
  details: { ...message.details, ...decision.card }
})

/** Fallbacks of ended runs carry the decision; other fallbacks stay the factual notice. */
export const layerComposer: Layer.Layer<FallbackComposer, never, RunStore | LaunchStore> = Layer.effect(
  FallbackComposer,
  Effect.gen(function* () {
    const context = yield* Effect.context<RunStore | LaunchStore>()
    return FallbackComposer.of({
      compose: (intent) =>
        Effect.map(decisionFor(intent.runId), (decision) =>
          Option.match(decision, {
            onNone: () => fallbackMessage(intent),
            onSome: (found) => withDecision(fallbackMessage(intent), found)
          })
        ).pipe(Effect.provide(context))
    })
  })
)

/** The Coordinator the engine uses: presentations of ended runs carry the decision. */
export const layerCoordinator: Layer.Layer<Coordinator, never, Coordinator | RunStore | LaunchStore> =
  Layer.effect(
    Coordinator,
    Effect.gen(function* () {
      const inner = yield* Coordinator
      const context = yield* Effect.context<RunStore | LaunchStore>()
      const deliverNatural: CoordinatorService["deliverNatural"] = (natural) =>
        natural.kind !== "presentation" || natural.message.customType !== PRESENTATION_TYPE
          ? inner.deliverNatural(natural)
          : Effect.flatMap(Effect.provide(decisionFor(natural.runId), context), (decision) =>
              inner.deliverNatural(
                Option.match(decision, {
                  onNone: () => natural,
                  onSome: (found) => ({ ...natural, message: withDecision(natural.message, found) })
                })
              )
            )
      return Coordinator.of({ ...inner, deliverNatural })
    })
  )
