/**
 * The `workflow` tool: its input and its actions as programs over the services. The input is one
 * object with an `action` field; the typebox schema (`extension/tool-parameters.ts`) is what Pi
 * shows the model, and `decodeToolInput` is the authoritative check (typebox validation in Pi is
 * best-effort), returning a clear, bounded message for anything malformed (`input-bounds.ts`
 * first refuses what no later step could even copy). The adapter decodes the input and returns
 * the reply; nothing here touches Pi directly. The tool is the agent's authority: it acts only on
 * runs of its own session (src/domain/identity.ts).
 */
import { Clock, Effect, Either, Option, ParseResult, Schema } from "effect"
import { foreignRun, type OwnedAction } from "../domain/identity.ts"
import { clipCodePoints as clip } from "../domain/text.ts"
import { type EngineService, Engine } from "../engine/engine.ts"
import { WorkflowRegistry } from "../engine/registry.ts"
import { Notifications } from "../notifications/notifications.ts"
import { PiSession } from "../session/pi-session.ts"
import { RunStore } from "../store/run-store.ts"
import type { LaunchStore } from "../store/launch-store.ts"
import { chainStatus, type LaunchReply, restartRun, startWorkflow } from "../terminal/launches.ts"
import { boundToolArguments, count, fieldName, MAX_ERROR_CHARS, quote } from "./input-bounds.ts"
import { withReminders } from "./reminded.ts"
import { describeRun, describeStatus, failed, ok, type Reply, withStartExample } from "./replies.ts"

/** A string parameter; the message names what came instead, shortly (never the whole value). */
const Text = Schema.String.annotations({ message: (issue) => `must be a string, not ${quote(issue.actual)}` })

const Id = Text.pipe(
  Schema.minLength(1, { message: () => "must be a non-empty string" }),
  Schema.maxLength(512, { message: () => "must be at most 512 characters" })
)

export const ToolInput = Schema.Union(
  Schema.TaggedStruct("list", {}),
  Schema.TaggedStruct("start", { workflow: Id, input: Schema.optional(Schema.Unknown) }),
  Schema.TaggedStruct("status", { runId: Schema.optional(Id) }),
  Schema.TaggedStruct("cancel", { runId: Schema.optional(Id) }),
  Schema.TaggedStruct("submit", { requestId: Id, output: Schema.Unknown }),
  // The text's own rules (non-empty, at most 2 KiB) are checked by the notification service.
  Schema.TaggedStruct("progress", { requestId: Id, text: Text }),
  Schema.TaggedStruct("restart", { runId: Id }),
  Schema.TaggedStruct("answer", { requestId: Id, answer: Schema.Unknown })
)
export type ToolInput = typeof ToolInput.Type

const decode = Schema.decodeUnknownEither(ToolInput, { onExcessProperty: "error", errors: "all" })

/** Phrases an error lists before it counts the rest. */
const MAX_PHRASES = 5
/** Unknown parameter names an error lists before it counts the rest. */
const MAX_UNKNOWN_NAMES = 3
/** Longest single phrase (a schema message can quote the whole bad value). */
const MAX_PHRASE_CHARS = 200

/**
 * Decode raw tool parameters; `Left` carries a message fit to show the model as a tool error,
 * at most `MAX_ERROR_CHARS` code points whatever the input.
 */
export const decodeToolInput = (params: unknown): Either.Either<ToolInput, string> => {
  const bounded = boundToolArguments(params)
  if ("problem" in bounded) return Either.left(bounded.problem)
  const { action, fields } = bounded
  if (action === "submit" && !("output" in fields)) {
    return Either.left(`workflow submit: "output" is required`)
  }
  if (action === "answer" && !("answer" in fields)) {
    return Either.left(`workflow answer: "answer" is required`)
  }
  return Either.mapLeft(decode({ _tag: action, ...fields }), (error) =>
    clip(`workflow ${action}: ${describeIssues(error)}`, MAX_ERROR_CHARS)
  )
}

const unknownPhrase = (names: ReadonlyArray<string>): string => {
  const listed = names.slice(0, MAX_UNKNOWN_NAMES).map(fieldName)
  if (names.length === 1) return `${listed[0]} is not a parameter of this action`
  const more = names.length - listed.length
  const last = more > 0 ? count(more, "more unknown parameter", "more unknown parameters") : listed.pop()
  return `${listed.join(", ")} and ${last} are not parameters of this action`
}

/**
 * One short phrase per offending field (`workflow is missing`), not the schema's whole type:
 * the model reads this and should see at once what to change. Unknown parameters are named a
 * few at a time and counted, however many there are.
 */
const describeIssues = (error: ParseResult.ParseError): string => {
  const seen = new Set<string>()
  const phrases: Array<string> = []
  const unknown: Array<string> = []
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    if (issue._tag === "Unexpected" && issue.path.length === 1) {
      unknown.push(String(issue.path[0]))
      continue
    }
    const field = issue.path.map((key) => fieldName(String(key))).join(".")
    // A union reports one issue per member for the same field; the first says enough.
    if (seen.has(field)) continue
    seen.add(field)
    const message = issue._tag === "Unexpected" ? "is not a parameter of this action" : issue.message
    phrases.push(clip(field === "" ? message : `${field} ${message}`, MAX_PHRASE_CHARS))
  }
  const shown = phrases.slice(0, MAX_PHRASES)
  if (phrases.length > shown.length) {
    shown.push(count(phrases.length - shown.length, "more problem", "more problems"))
  }
  if (unknown.length > 0) shown.push(unknownPhrase(unknown))
  return shown.join("; ")
}

/** An action without a run ID, in a session that has no queued, running or waiting run. */
export class NoActiveRun extends Schema.TaggedError<NoActiveRun>()("NoActiveRun", {
  sessionId: Schema.String
}) {
  override get message() {
    return "this session has no active workflow run; pass runId"
  }
}

/** The given run, or the session's queued/running/waiting run. */
export const targetRun = (engine: EngineService, sessionId: string, runId: string | undefined) =>
  runId !== undefined
    ? Effect.succeed(runId)
    : Effect.flatMap(engine.active(sessionId), (active) =>
        Option.match(active, {
          onNone: () => Effect.fail(new NoActiveRun({ sessionId })),
          onSome: (run) => Effect.succeed(run.runId)
        })
      )

/**
 * The run a tool action names: the session's active run, or the given one when this session owns
 * it. Another session's run is refused before anything is read or written for the action (a
 * run's target session changes only when the user adopts it into another session, and then the
 * old session's tool is refused from the next call on). An unknown run passes
 * through: the action itself says it does not exist.
 */
const ownRun = (engine: EngineService, sessionId: string, runId: string | undefined, action: OwnedAction) =>
  Effect.gen(function* () {
    const target = yield* targetRun(engine, sessionId, runId)
    if (runId === undefined) return target
    // A store that cannot answer (failing or throwing) does not block the action: a cancel must still abort this
    // session's turn on its own run under a store fault (abort ordering), and a run this
    // process holds is always this session's; any write the action needs meets the same fault.
    const found = yield* (yield* RunStore).get(target).pipe(
      // Bounded like the abort path's own claim check: a slow store never delays the action.
      Effect.timeoutFail({ duration: "100 millis", onTimeout: () => "slow" }),
      Effect.catchAllCause(() => Effect.succeed(Option.none()))
    )
    const refusal = Option.isSome(found) ? foreignRun(found.value, sessionId, action) : null
    if (refusal !== null) return yield* refusal
    return target
  })

/** What Pi tells us about the call: its ID keys a terminal turn's launch reservation. */
export interface ToolCall {
  readonly toolCallId?: string
}

const launched = (launch: LaunchReply): Reply => {
  const { run } = launch
  const what =
    launch.kind === "restart"
      ? `Restarted as run ${run.runId}`
      : `Workflow "${run.workflowName}" is queued as run ${run.runId}`
  const again = launch.repeated ? " (this tool call had already made it)" : ""
  return ok(
    `${what}${again}. It starts when this turn ends; its steps arrive as new messages. ` +
      "Do not poll or wait for it in this turn.",
    { runId: run.runId, state: run.state, launch: launch.kind, repeated: launch.repeated }
  )
}

/** The services the tool's and the command's actions run over. */
export type ActionServices = Engine | WorkflowRegistry | PiSession | Notifications | RunStore | LaunchStore

export const runTool = (input: ToolInput, call: ToolCall = {}): Effect.Effect<Reply, never, ActionServices> =>
  Effect.gen(function* () {
    const engine = yield* Engine
    const sessionId = yield* (yield* PiSession).sessionId
    switch (input._tag) {
      case "list": {
        const workflows = yield* (yield* WorkflowRegistry).list
        if (workflows.length === 0) return ok("No workflows are loaded (add .pi/workflows/*.workflow.mjs).")
        const lines = workflows.map((w) => {
          const revision = w.revision === null ? "" : ` (revision ${w.revision})`
          const about = w.workflow.description === null ? "" : ` — ${w.workflow.description}`
          return `- ${w.workflow.name}${revision}${about}`
        })
        return ok(`Workflows:\n${lines.join("\n")}`, { workflows: workflows.map((w) => w.workflow.name) })
      }
      case "start":
        return launched(
          yield* startWorkflow({
            workflow: input.workflow,
            input: input.input ?? null,
            toolCallId: call.toolCallId ?? null
          })
        )
      case "restart": {
        const runId = yield* ownRun(engine, sessionId, input.runId, "restart")
        return launched(yield* restartRun({ runId, toolCallId: call.toolCallId ?? null }))
      }
      case "status": {
        const runId = yield* ownRun(engine, sessionId, input.runId, "status")
        const now = yield* Clock.currentTimeMillis
        const status = yield* withReminders(yield* engine.status(runId), now)
        const chain = yield* chainStatus(runId)
        const described = describeStatus(status, now)
        const text = chain.length === 0 ? described : `${described}\n${chain.join("\n")}`
        return ok(text, { runId, state: status.state, status })
      }
      case "cancel": {
        const runId = yield* ownRun(engine, sessionId, input.runId, "cancel")
        const run = yield* engine.cancel(runId, { by: "agent" })
        return ok(`Cancelled: ${describeRun(run)}`, { runId, state: run.state })
      }
      case "progress": {
        const receipt = yield* (yield* Notifications).progressForRequest({
          sessionId,
          requestId: input.requestId,
          text: input.text
        })
        return ok(
          receipt.status === "stored"
            ? "Progress noted for the user. Continue the step."
            : "Progress noted; it replaces a report from under a second ago and is shown shortly. Continue the step.",
          { ...receipt }
        )
      }
      case "answer": {
        const receipt = yield* engine.answer({
          sessionId,
          requestId: input.requestId,
          answer: input.answer,
          by: "agent"
        })
        return ok(
          `Answer recorded for request ${receipt.requestId} (run ${receipt.runId}, node ${receipt.nodeId}). ` +
            "The workflow continues on its own; end this turn.",
          { ...receipt }
        )
      }
      case "submit": {
        const receipt = yield* engine.submit({ sessionId, requestId: input.requestId, output: input.output })
        return ok(
          `Accepted output for request ${receipt.requestId} (run ${receipt.runId}, node ${receipt.nodeId}). ` +
            "The workflow continues on its own; end this turn.",
          { ...receipt }
        )
      }
    }
  }).pipe(
    Effect.catchAll((error) => Effect.succeed(withStartExample(failed(input._tag, error), error, "tool"))),
    // A store or service that throws is still a failed action for the model, never a crash.
    Effect.catchAllDefect((defect) => Effect.succeed(failed(input._tag, defect))),
    // The root of a tool call's trace: the engine's and the stores' spans of the action nest here.
    Effect.withSpan(`WorkflowTool.${input._tag}`, {
      attributes: call.toolCallId === undefined ? {} : { toolCallId: call.toolCallId }
    })
  )
