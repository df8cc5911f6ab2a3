/**
 * The user's `/workflow` command: its arguments (`start <name> [json]`, `status [runId]`,
 * `cancel [runId]`, `pause [runId]`, `resume [runId]`, `answer <runId> <text>`, `list`; pure parsing), its actions and its
 * tab completion. Unlike the tool, nothing here creates a turn intent: a direct cancel or pause is
 * the user taking control, so no automatic model turn follows. Also unlike the tool, the user may
 * act on any run of the project, another session's included; the reply then names the owning
 * session.
 */
import { Clock, Effect, Either, Option } from "effect"
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeep, clipCodePoints as clip } from "../domain/text.ts"
import { Engine } from "../engine/engine.ts"
import { summarize } from "../engine/messages.ts"
import { WorkflowRegistry } from "../engine/registry.ts"
import { Notifications } from "../notifications/notifications.ts"
import { oneLine } from "../notifications/notifier.ts"
import { PiSession } from "../session/pi-session.ts"
import { RunNotFound, RunStore } from "../store/run-store.ts"
import { MAX_ERROR_CHARS, quote } from "./input-bounds.ts"
import {
  cancelledWithTurn,
  describeAdoption,
  describeProjectRuns,
  describeRun,
  failed,
  ok,
  type Reply,
  readableStatus,
  withStartExample
} from "./replies.ts"
import { withReminders } from "./reminded.ts"
import { type ActionServices, NoActiveRun, runTool, targetRun } from "./tool.ts"

export type CommandInput =
  /** `all`: the project's runs across sessions (`list --all`); otherwise the loaded workflows. */
  | { readonly _tag: "list"; readonly all?: boolean }
  | { readonly _tag: "start"; readonly workflow: string; readonly input: unknown }
  | { readonly _tag: "status" | "cancel" | "pause" | "resume"; readonly runId: string | undefined }
  /** The user's answer to the run's waiting checkpoint: the text as a JSON string. */
  | { readonly _tag: "answer"; readonly runId: string; readonly text: string }

export const COMMAND_USAGE =
  "usage: /workflow list [--all] | start <name> [json input] | status [runId] | cancel [runId] | pause [runId] | resume [runId] | answer <runId> <text>"

export const parseCommand = (args: string): Either.Either<CommandInput, string> => {
  const trimmed = args.trim()
  const [verb = "", ...restParts] = trimmed.split(/\s+/)
  const rest = trimmed.slice(verb.length).trim()
  switch (verb) {
    case "":
    case "list":
      if (rest === "--all") return Either.right({ _tag: "list", all: true })
      return rest === "" ? Either.right({ _tag: "list" }) : Either.left(COMMAND_USAGE)
    case "start": {
      const [workflow] = restParts
      if (workflow === undefined)
        return Either.left(`/workflow start needs a workflow name. ${COMMAND_USAGE}`)
      const json = rest.slice(workflow.length).trim()
      if (json === "") return Either.right({ _tag: "start", workflow, input: null })
      let input: unknown
      try {
        input = JSON.parse(json)
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error)
        return Either.left(clip(`/workflow start: the input is not valid JSON (${why})`, MAX_ERROR_CHARS))
      }
      // Deeper JSON would overflow every recursive copy and check downstream; refuse it here.
      if (nestsDeeperThan(input, MAX_JSON_DEPTH)) {
        return Either.left(`/workflow start: ${tooDeep("the input")}`)
      }
      return Either.right({ _tag: "start", workflow, input })
    }
    case "status":
    case "cancel":
    case "pause":
    case "resume":
      if (restParts.length > 1) return Either.left(COMMAND_USAGE)
      return Either.right({ _tag: verb, runId: restParts[0] })
    case "answer": {
      const [runId] = restParts
      const text = runId === undefined ? "" : rest.slice(runId.length).trim()
      if (runId === undefined || text === "")
        return Either.left(`/workflow answer needs a run ID and the answer: /workflow answer <runId> <text>`)
      return Either.right({ _tag: "answer", runId, text })
    }
    default:
      return Either.left(`unknown subcommand ${quote(verb)}. ${COMMAND_USAGE}`)
  }
}

export interface CommandReply extends Reply {
  /** The user resumed or cancelled a held workflow: fallback delivery may continue. */
  readonly releaseHold: boolean
  /** A run was queued while Pi is idle: activate it now. */
  readonly activate: boolean
}

/**
 * The command may act on any run of the project (the user's authority); when the run is another
 * session's, the reply says whose.
 */
const ownerNote = (run: { readonly targetSessionId: string }, sessionId: string): string =>
  run.targetSessionId === sessionId
    ? ""
    : `\nThis run belongs to session ${run.targetSessionId}, not this one.`

const reply = (
  base: Reply,
  flags: Partial<Pick<CommandReply, "releaseHold" | "activate">> = {}
): CommandReply => ({
  ...base,
  releaseHold: flags.releaseHold ?? false,
  activate: flags.activate ?? false
})

export const runCommand = (input: CommandInput): Effect.Effect<CommandReply, never, ActionServices> =>
  Effect.gen(function* () {
    const engine = yield* Engine
    const sessionId = yield* (yield* PiSession).sessionId
    switch (input._tag) {
      case "list": {
        if (input.all !== true) return reply(yield* runTool({ _tag: "list" }))
        const runs = yield* (yield* RunStore).list({ limit: MAX_RUNS + 1 })
        const at = yield* Clock.currentTimeMillis
        const shown = runs.slice(0, MAX_RUNS).map((run) => summarize(run, at))
        return reply(
          ok(describeProjectRuns(shown, sessionId, at, runs.length > MAX_RUNS), {
            runs: shown.map((run) => ({ runId: run.runId, sessionId: run.targetSessionId, state: run.state }))
          })
        )
      }
      case "start": {
        const run = yield* engine.start({
          workflow: input.workflow,
          input: input.input,
          sessionId,
          origin: "command"
        })
        return reply(ok(`Queued ${describeRun(run)}`, { runId: run.runId }), { activate: true })
      }
      case "status": {
        const notifications = yield* Notifications
        // Each run's newest progress report, on its own line under the run.
        const progressOf = (runId: string) =>
          Effect.map(notifications.latestProgress(runId), (text) =>
            Option.match(text, { onNone: () => "", onSome: (line) => `\n  progress: ${oneLine(line)}` })
          )
        if (input.runId === undefined) {
          const runs = yield* engine.list(sessionId, { limit: 10 })
          if (runs.length === 0) return reply(ok("No workflow runs in this session."))
          const at = yield* Clock.currentTimeMillis
          const lines = yield* Effect.forEach(runs, (run) =>
            Effect.zipWith(
              withReminders(run, at),
              progressOf(run.runId),
              (counted, progress) => `${describeRun(counted)}${progress}`
            )
          )
          return reply(ok(lines.join("\n")))
        }
        const now = yield* Clock.currentTimeMillis
        const status = yield* withReminders(yield* engine.status(input.runId), now)
        const progress = yield* progressOf(input.runId)
        return reply(
          ok(`${readableStatus(status, now)}${progress}${ownerNote(status, sessionId)}`, {
            runId: status.runId,
            status
          })
        )
      }
      case "cancel": {
        const runId = yield* targetRun(engine, sessionId, input.runId)
        const session = yield* PiSession
        // Is the model working on this run's step right now? Then its turn stops too.
        const active = yield* engine.active(sessionId)
        const stepTurn =
          Option.isSome(active) &&
          active.value.runId === runId &&
          active.value.openRequestId !== null &&
          !(yield* session.isIdle)
        // Stopped once the cancel is stored, so the settle that follows finds no run to hold, and
        // no successor turn is owed (the user is at the keyboard): by the runner of a running run
        // (transitions.ts, the direct cancel's `stopsTurn`; a cancel from another process too),
        // here for a run at a waiting checkpoint, which has no runner.
        const cancelled = yield* engine.cancel(runId, { by: "user" })
        if (stepTurn && Option.isSome(active) && active.value.state !== "running") yield* session.abort
        // A cancelled run is no longer held: fallbacks and launches may continue.
        const text = stepTurn ? cancelledWithTurn(cancelled) : `Cancelled ${describeRun(cancelled)}`
        return reply(ok(`${text}${ownerNote(cancelled, sessionId)}`), { releaseHold: true })
      }
      case "pause": {
        const runId = yield* targetRun(engine, sessionId, input.runId)
        const paused = yield* engine.pause(runId)
        return reply(
          ok(`Pausing at the next step boundary: ${describeRun(paused)}${ownerNote(paused, sessionId)}`)
        )
      }
      case "answer": {
        const store = yield* RunStore
        const run = yield* store.get(input.runId)
        if (Option.isNone(run)) return yield* new RunNotFound({ runId: input.runId })
        if (run.value.targetSessionId !== sessionId)
          return reply(
            failed(
              "answer",
              `run ${input.runId} waits in session ${run.value.targetSessionId}; answer it there (pi --session ${run.value.targetSessionId}), or move it here with /workflow resume ${input.runId} when that session is closed`
            )
          )
        const requestId = run.value.waitRequestId
        if (requestId === null)
          return reply(
            failed("answer", `run ${input.runId} is not waiting for an answer (state ${run.value.state})`)
          )
        const receipt = yield* engine.answer({
          sessionId,
          requestId,
          runId: input.runId,
          answer: input.text,
          by: "user"
        })
        return reply(
          ok(`Answered run ${receipt.runId} at ${receipt.nodeId}; the workflow continues.`, { ...receipt })
        )
      }
      case "resume": {
        // Without a run ID: this session's run. With one: another session's run is adopted here.
        const runId = yield* targetRun(engine, sessionId, input.runId)
        const adopted = yield* engine.adopt(runId, sessionId)
        const { adoption } = adopted
        return reply(
          ok(
            describeAdoption(adopted),
            adoption === null ? { runId } : { runId, adoptedFrom: adoption.fromSessionId, adoption }
          ),
          { releaseHold: true }
        )
      }
    }
  }).pipe(
    Effect.catchAll((error) =>
      Effect.succeed(
        reply(
          error instanceof NoActiveRun
            ? {
                text:
                  `Nothing to ${input._tag}: this session has no active workflow run. ` +
                  `To ${input._tag} another run, give its ID: /workflow ${input._tag} <runId> (/workflow status lists them).`,
                isError: true,
                details: { error: "NoActiveRun" }
              }
            : withStartExample(failed(input._tag, error), error, "command")
        )
      )
    ),
    // A store or service that throws is still a failed command for the user, never a crash.
    Effect.catchAllDefect((defect) => Effect.succeed(reply(failed(input._tag, defect))))
  )

/**
 * Tab completion for `/workflow …`: the subcommands, then the loaded workflows after `start`
 * and the project's recent runs (newest first, this session's first) after the commands that
 * take a run ID. Reads only; a store that cannot answer completes nothing rather than failing.
 */
export interface Completion {
  /** The whole argument text after `/workflow ` once the completion is taken. */
  readonly value: string
  readonly label: string
  readonly description?: string
}

/** Subcommands and what each does, in the order people reach for them. */
export const SUBCOMMANDS: ReadonlyArray<readonly [string, string]> = [
  ["status", "a run's state and steps (default: this session's runs)"],
  ["start", "start a workflow: start <name> [json input]"],
  ["cancel", "stop a run; no model turn follows"],
  ["pause", "hold a run at its next step boundary"],
  ["resume", "continue a held or paused run; adopt another session's parked run"],
  ["answer", "answer a waiting run: answer <runId> <text>"],
  ["list", "the loaded workflows; list --all: the project's runs"]
]

const RUN_VERBS = new Set(["status", "cancel", "pause", "resume", "answer"])
/** At most this many run IDs are offered. */
const MAX_RUNS = 20

export const commandCompletions = (prefix: string) =>
  Effect.gen(function* () {
    const words = prefix.trimStart().split(/\s+/)
    if (words.length <= 1) {
      const typed = words[0] ?? ""
      return SUBCOMMANDS.filter(([name]) => name.startsWith(typed)).map(
        ([name, description]): Completion => ({ value: `${name} `, label: name, description })
      )
    }
    if (words.length > 2) return []
    const [verb = "", typed = ""] = words
    if (verb === "list") return "--all".startsWith(typed) ? [{ value: "list --all", label: "--all" }] : []
    if (verb === "start") {
      const workflows = yield* (yield* WorkflowRegistry).list
      return workflows
        .map((w) => w.workflow.name)
        .filter((name) => name.startsWith(typed))
        .sort()
        .map((name): Completion => ({ value: `start ${name} `, label: name }))
    }
    if (!RUN_VERBS.has(verb)) return []
    const sessionId = yield* (yield* PiSession).sessionId
    const runs = yield* (yield* RunStore).list({ limit: 200 })
    const mine = runs.filter((run) => run.targetSessionId === sessionId)
    const others = runs.filter((run) => run.targetSessionId !== sessionId)
    return [...mine, ...others]
      .filter((run) => run.runId.startsWith(typed))
      .slice(0, MAX_RUNS)
      .map(
        (run): Completion => ({
          value: `${verb} ${run.runId}`,
          label: run.runId,
          description: `${run.workflowName} · ${run.state}${run.targetSessionId === sessionId ? "" : " · another session"}`
        })
      )
  }).pipe(Effect.orElseSucceed((): ReadonlyArray<Completion> => []))
