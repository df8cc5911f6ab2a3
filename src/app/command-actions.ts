/**
 * The user's `/workflow` command. Unlike the tool, nothing here creates a turn intent: a direct
 * cancel or pause is the user taking control, so no automatic model turn follows.
 */
import { Effect } from "effect"
import type { CommandInput } from "./command-input.ts"
import { Engine } from "../engine/engine.ts"
import type { WorkflowRegistry } from "../engine/registry.ts"
import { PiSession } from "../session/pi-session.ts"
import type { RunStore } from "../store/run-store.ts"
import type { LaunchStore } from "../terminal/launch-store.ts"
import { describeRun, describeStatus, failed, ok, type Reply } from "./replies.ts"
import { runTool, targetRun } from "./tool-actions.ts"

export interface CommandReply extends Reply {
  /** The user resumed or cancelled a held workflow: fallback delivery may continue. */
  readonly releaseHold: boolean
  /** A run was queued while Pi is idle: activate it now. */
  readonly activate: boolean
}

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
): Effect.Effect<CommandReply, never, Engine | WorkflowRegistry | PiSession | RunStore | LaunchStore> =>
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
        if (input.runId === undefined) {
          const runs = yield* engine.list(sessionId, { limit: 10 })
          if (runs.length === 0) return reply(ok("No workflow runs in this session."))
          return reply(ok(runs.map(describeRun).join("\n")))
        }
        return reply(ok(describeStatus(yield* engine.status(input.runId))))
      }
      case "cancel": {
        const runId = yield* targetRun(engine, sessionId, input.runId)
        // A cancelled run is no longer held: fallbacks and launches may continue.
        return reply(ok(`Cancelled ${describeRun(yield* engine.cancel(runId, { by: "user" }))}`), {
          releaseHold: true
        })
      }
      case "pause": {
        const runId = yield* targetRun(engine, sessionId, input.runId)
        return reply(ok(`Pausing at the next step boundary: ${describeRun(yield* engine.pause(runId))}`))
      }
      case "resume": {
        const runId = yield* targetRun(engine, sessionId, input.runId)
        return reply(ok(`Resumed ${describeRun(yield* engine.resume(runId))}`), { releaseHold: true })
      }
    }
  }).pipe(Effect.catchAll((error) => Effect.succeed(reply(failed(input._tag, error)))))
