/**
 * Launches from a terminal decision turn, as programs over the services: `restart` of an ended
 * run, and `start` (Monitor or any other workflow) while a terminal turn is the current turn.
 * Each reserves a queued run; the queue activates it only after `agent_settled`. A terminal
 * turn gets one launch: a second one fails, and the same tool call repeated (after a crash or
 * reload) returns the run it already made.
 *
 * The current terminal turn is read from the session branch: the newest workflow message that
 * the model saw as a turn is a presentation or deferred-turn message whose run has ended in this
 * session. Hidden and passive messages (the turn trigger, notifications) are not turns and are
 * skipped. Only message details are read, never a user message.
 */
import { Effect, Either, Option } from "effect"
import {
  DEFERRED_TURN_TYPE,
  NOTIFICATION_TYPE,
  PRESENTATION_TYPE,
  SUCCESSOR_REQUESTED_TYPE,
  TURN_TRIGGER_TYPE
} from "../domain/message-types.ts"
import { InvalidInput } from "../domain/errors.ts"
import { Engine, type RunSummary } from "../engine/engine.ts"
import { WorkflowRegistry } from "../engine/registry.ts"
import { PiSession } from "../session/pi-session.ts"
import { RunStore } from "../store/run-store.ts"
import {
  type LaunchKind,
  type LaunchRecord,
  LaunchStore,
  type Reserved,
  RESTART_LIMIT,
  RestartRefused
} from "../store/launch-store.ts"
import { decideRestart } from "./restart-policy.ts"
import { terminalState } from "./terminal-outcome.ts"

/** Recognised by name: the Monitor built-in's launch does not count as a restart. */
export const MONITOR_WORKFLOW = "monitor"

export interface TerminalTurn {
  readonly runId: string
  readonly intentId: string | null
}

const WORKFLOW_MESSAGE = "pi-workflows-"

/**
 * Workflow messages that are no turn of their own: the hidden trigger that restarts the turn of
 * an unanswered successor (the successor before it is the turn), passive notifications and the
 * successor-requested mark. The terminal turn is the newest message that is not one of them.
 */
const NOT_A_TURN: ReadonlySet<string> = new Set([
  TURN_TRIGGER_TYPE,
  NOTIFICATION_TYPE,
  SUCCESSOR_REQUESTED_TYPE
])

const stringField = (details: unknown, key: string): string | null => {
  if (typeof details !== "object" || details === null) return null
  const value: unknown = Reflect.get(details, key)
  return typeof value === "string" && value.length > 0 ? value : null
}

/** The terminal turn the model is in now, if its newest workflow message is a terminal one. */
export const currentTerminalTurn = Effect.gen(function* () {
  const session = yield* PiSession
  const sessionId = yield* session.sessionId
  const branch = yield* session.branch
  const newest = branch.findLast(
    (entry) => entry.customType.startsWith(WORKFLOW_MESSAGE) && !NOT_A_TURN.has(entry.customType)
  )
  if (newest === undefined) return Option.none<TerminalTurn>()
  if (newest.customType !== PRESENTATION_TYPE && newest.customType !== DEFERRED_TURN_TYPE) {
    return Option.none<TerminalTurn>()
  }
  const runId = stringField(newest.details, "runId")
  if (runId === null) return Option.none<TerminalTurn>()
  const run = yield* (yield* RunStore).get(runId)
  if (Option.isNone(run) || run.value.targetSessionId !== sessionId || terminalState(run.value) === null) {
    return Option.none<TerminalTurn>()
  }
  return Option.some<TerminalTurn>({ runId, intentId: stringField(newest.details, "turnIntentId") })
})

/**
 * A launch inside a terminal turn is keyed by its tool call (a repeated call finds its run), so
 * one without a tool call ID is refused up front instead of failing in the store.
 */
const requireCallId = (terminal: TerminalTurn | null, toolCallId: string | null) =>
  terminal !== null && toolCallId === null
    ? Effect.fail(
        new InvalidInput({
          field: "toolCallId",
          message: `a launch in the terminal turn of run ${terminal.runId} needs the tool call's ID; nothing was started`
        })
      )
    : Effect.void

export interface LaunchReply {
  readonly run: RunSummary
  readonly kind: LaunchKind
  /** The same tool call had already made this launch. */
  readonly repeated: boolean
  /** The terminal turn this launch was that turn's one reservation for. */
  readonly terminalRunId: string | null
}

const reply = (reserved: Reserved, kind: LaunchKind, terminalRunId: string | null) =>
  Effect.map(
    Effect.flatMap(Engine, (engine) => engine.status(reserved.runId)),
    (run) => ({
      run,
      kind: reserved._tag === "Existing" ? reserved.kind : kind,
      repeated: reserved._tag === "Existing",
      terminalRunId
    })
  )

/** `workflow start`: inside a terminal turn it is the turn's one launch; elsewhere a plain start. */
export const startWorkflow = (input: {
  readonly workflow: string
  readonly input: unknown
  readonly toolCallId: string | null
}) =>
  Effect.gen(function* () {
    const engine = yield* Engine
    const sessionId = yield* (yield* PiSession).sessionId
    const turn = yield* currentTerminalTurn
    const start = engine.start({ workflow: input.workflow, input: input.input, sessionId, origin: "tool" })
    const kind: LaunchKind = input.workflow === MONITOR_WORKFLOW ? "monitor" : "start"
    if (Option.isNone(turn)) {
      const run = yield* start
      return { run, kind, repeated: false, terminalRunId: null } satisfies LaunchReply
    }
    yield* requireCallId(turn.value, input.toolCallId)
    const reserved = yield* (yield* LaunchStore).reserve(
      { kind, lineage: null, terminal: turn.value, toolCallId: input.toolCallId },
      start
    )
    return yield* reply(reserved, kind, turn.value.runId)
  })

/** `workflow restart {runId}`: a new run of the exact workflow and input, with lineage. */
export const restartRun = (input: { readonly runId: string; readonly toolCallId: string | null }) =>
  Effect.gen(function* () {
    const engine = yield* Engine
    const runs = yield* RunStore
    const launches = yield* LaunchStore
    const sessionId = yield* (yield* PiSession).sessionId
    const found = yield* runs.get(input.runId)
    if (Option.isNone(found)) {
      return yield* new RestartRefused({
        runId: input.runId,
        reason: "unknown",
        detail: "no such run exists"
      })
    }
    const run = found.value
    const child = yield* launches.childOf(run.runId)
    // The same tool call again (a retry after a crash or reload): answer with what it made.
    if (Option.isSome(child) && input.toolCallId !== null && child.value.toolCallId === input.toolCallId) {
      return yield* reply({ _tag: "Existing", runId: child.value.runId, kind: "restart" }, "restart", null)
    }
    const own = yield* launches.get(run.runId)
    const loaded = yield* Effect.either((yield* WorkflowRegistry).get(run.workflowName))
    const decided = decideRestart({
      run,
      lineage: Option.match(own, { onNone: () => null, onSome: (launch) => launch.launch.lineage }),
      sessionId,
      loaded: Either.isRight(loaded)
        ? { revision: loaded.right.revision, fingerprint: loaded.right.fingerprint }
        : null,
      restartedAs: Option.match(child, { onNone: () => null, onSome: (launch) => launch.runId })
    })
    if (Either.isLeft(decided)) return yield* decided.left
    const turn = yield* currentTerminalTurn
    const terminal = Option.getOrNull(turn)
    yield* requireCallId(terminal, input.toolCallId)
    const reserved = yield* launches.reserve(
      { kind: "restart", lineage: decided.right, terminal, toolCallId: input.toolCallId },
      engine.start({ workflow: run.workflowName, input: run.input, sessionId, origin: "tool" })
    )
    return yield* reply(reserved, "restart", terminal?.runId ?? null)
  })

/** One line for status: how the run was launched and where it sits in its restart chain. */
export const describeLaunch = (launch: LaunchRecord): string => {
  const lineage = launch.launch.lineage
  const parts = [`launched by ${launch.kind}`]
  if (launch.terminalRunId !== null) parts.push(`from the terminal turn of run ${launch.terminalRunId}`)
  if (lineage !== null) {
    parts.push(
      `restart ${lineage.restartNumber}/${RESTART_LIMIT} of chain root ${lineage.rootRunId}`,
      `parent ${lineage.parentRunId} (${lineage.earlier.at(-1)?.reasonKind ?? "ended"})`
    )
  }
  return parts.join(" · ")
}

/** The status lines about a run's chain: its own launch, and the run that restarted it. */
export const chainStatus = (runId: string) =>
  Effect.gen(function* () {
    const launches = yield* LaunchStore
    const lines: string[] = []
    const own = yield* launches.get(runId)
    if (Option.isSome(own)) lines.push(describeLaunch(own.value))
    const child = yield* launches.childOf(runId)
    if (Option.isSome(child)) lines.push(`restarted as run ${child.value.runId}`)
    const reserved = yield* launches.byTerminal(runId)
    if (Option.isSome(reserved) && reserved.value.runId !== Option.getOrNull(child)?.runId) {
      lines.push(`its terminal turn launched run ${reserved.value.runId} (${reserved.value.kind})`)
    }
    return lines
  })
