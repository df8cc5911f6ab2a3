/**
 * The user's `/workflow` command. Unlike the tool, nothing here creates a turn intent: a direct
 * cancel or pause is the user taking control, so no automatic model turn follows. Also unlike the
 * tool, the user may act on any run of the project, another session's included; the reply then
 * names the owning session.
 */
import { Clock, Effect, Option } from "effect"
import type { CommandInput } from "./command-input.ts"
import { Engine } from "../engine/engine.ts"
import type { WorkflowRegistry } from "../engine/registry.ts"
import { Notifications } from "../notifications/notifications.ts"
import { oneLine } from "../notifications/notifier.ts"
import { PiSession } from "../session/pi-session.ts"
import type { RunStore } from "../store/run-store.ts"
import type { LaunchStore } from "../store/launch-store.ts"
import {
  cancelledWithTurn,
  describeRun,
  failed,
  ok,
  type Reply,
  readableStatus,
  withStartExample
} from "./replies.ts"
import { NoActiveRun, runTool, targetRun } from "./tool-actions.ts"

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

export const runCommand = (
  input: CommandInput
): Effect.Effect<
  CommandReply,
  never,
  Engine | WorkflowRegistry | PiSession | Notifications | RunStore | LaunchStore
> =>
  Effect.gen(function* () {
    const engine = yield* Engine
    const sessionId = yield* (yield* PiSession).sessionId
    switch (input._tag) {
      case "list":
        return reply(yield* runTool({ _tag: "list" }))
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
          const lines = yield* Effect.forEach(runs, (run) =>
            Effect.map(progressOf(run.runId), (progress) => `${describeRun(run)}${progress}`)
          )
          return reply(ok(lines.join("\n")))
        }
        const status = yield* engine.status(input.runId)
        const progress = yield* progressOf(input.runId)
        return reply(
          ok(
            `${readableStatus(status, yield* Clock.currentTimeMillis)}${progress}${ownerNote(status, sessionId)}`,
            {
              runId: status.runId,
              status
            }
          )
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
        const cancelled = yield* engine.cancel(runId, { by: "user" })
        // Abort only after the cancel is stored: the settle that follows then finds no active
        // run to hold, and no successor turn is owed (the user is at the keyboard).
        if (stepTurn) yield* session.abort
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
      case "resume": {
        const runId = yield* targetRun(engine, sessionId, input.runId)
        const resumed = yield* engine.resume(runId)
        return reply(ok(`Resumed ${describeRun(resumed)}${ownerNote(resumed, sessionId)}`), {
          releaseHold: true
        })
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
