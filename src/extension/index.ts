/**
 * The Pi extension entry (what `pi.extensions` names). It registers the `workflow` tool, the
 * `/workflow` command, the deferred-turn card and the event handlers, and forwards each to the
 * session application (`session-app.ts`), which it imports on first use: Effect, the stores and
 * the engine load after Pi is ready, not during its start-up.
 *
 * `session_start` only records its context and schedules the load for after Pi's start-up: Pi
 * emits it before it starts reading input (RPC) or drawing (TUI), and loading the application
 * chunk (Effect, ~1.5 MB) and opening the database there would add ~100 ms to Pi's ready time
 * (docs/bench.md). Nothing is lost or reordered: every handler awaits the one shared load, which
 * runs the session start work (fallback sync, run recovery) before any handler's own call, so an
 * early tool call or command just waits for it.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { nodeVersionProblem } from "../node-version.ts"
import {
  withoutHidden,
  makeWireWatch,
  originOf,
  answeredSuccessor,
  beforeProviderCall
} from "./model-request.ts"
import { notifyUser } from "./outbound.ts"
import { registerDeferredTurnRenderer } from "./message-cards.ts"
import type { SessionApp } from "./session-app.ts"
import { makeSettleMark } from "./settle-mark.ts"
import { prepareToolArguments, toolParameters } from "./tool-parameters.ts"

const TOOL_DESCRIPTION =
  "Run and control multi-step workflows. Actions: list (available workflows), start {workflow, input?} " +
  "(queued; it starts after this turn ends and its steps arrive as new messages), status {runId?}, " +
  "cancel {runId?}, submit {requestId, output} (answer a workflow step message), " +
  "progress {requestId, text} (a short progress line for the user while you work on a step), " +
  "answer {requestId, answer} (answer a waiting workflow's question, a pi-workflows-presentation with state waiting), " +
  "restart {runId} (run an ended run again with the exact same workflow and input)."

/**
 * Run `load` once Pi has finished starting: Pi's start-up after `session_start` is synchronous
 * work and promise continuations, and its first input is read in the event loop's poll phase;
 * the second `setImmediate` runs after that phase, so the first request is answered first.
 */
const afterStartUp = (load: () => void): void => {
  setImmediate(() => setImmediate(load))
}

export default function piWorkflowTurns(pi: ExtensionAPI): void {
  // On an unsupported Node the application (and its native SQLite addon) is never loaded: the
  // user is told once, at session start, what to run instead.
  const nodeProblem = nodeVersionProblem(process.versions.node, "pi-workflow-turns")
  if (nodeProblem !== null) {
    pi.on("session_start", (_event, ctx) => {
      if (ctx.hasUI) ctx.ui.notify(nodeProblem, "error")
      else process.stderr.write(`[pi-workflow-turns] error: ${nodeProblem}\n`)
    })
    return
  }
  let loading: Promise<SessionApp> | undefined
  /** The context of `session_start`, until the loaded application has been started with it. */
  let startContext: ExtensionContext | undefined
  let shutDown = false
  const settleMark = makeSettleMark()

  const reportStartFailure = (ctx: ExtensionContext) => (error: unknown) => {
    const text = `pi-workflow-turns could not start: ${error instanceof Error ? error.message : String(error)}`
    notifyUser(ctx, text, "error")
  }

  const app = (): Promise<SessionApp> => {
    loading ??= import("./session-app.ts").then((module) => {
      const session = module.createSessionApp(pi, settleMark)
      // The session start work is called first, before the continuation of whichever handler
      // asked for the application; that handler's own call then finds the runtime opening.
      const ctx = startContext
      startContext = undefined
      if (ctx !== undefined) session.sessionStart(ctx).catch(reportStartFailure(ctx))
      return session
    })
    return loading
  }

  registerDeferredTurnRenderer(pi)

  pi.registerTool({
    name: "workflow",
    label: "Workflow",
    description: TOOL_DESCRIPTION,
    promptSnippet: "Start, inspect, cancel and answer multi-step workflows",
    promptGuidelines: [
      "Use the workflow tool with action submit to answer a pi-workflows-agent-step message, passing its requestId.",
      "A workflow waiting for an answer names its requestId: answer it with action answer when you can, or leave it to the user.",
      "After workflow start, end the turn: the workflow's steps arrive as new messages.",
      "When a workflow run ends you get one turn to decide what follows; launch at most one workflow in it."
    ],
    parameters: toolParameters,
    prepareArguments: prepareToolArguments,
    execute: async (toolCallId, params, _signal, _onUpdate, ctx) =>
      (await app()).tool(params, ctx, toolCallId)
  })

  pi.registerCommand("workflow", {
    description: "Workflows: list | start <name> [json] | status [runId] | cancel [runId] | pause | resume",
    handler: async (args, ctx) => (await app()).command(args, ctx),
    // Completion never loads the application itself: before it is open, nothing is offered.
    getArgumentCompletions: async (prefix) => {
      if (loading === undefined) return null
      const items = await (await loading).completions(prefix)
      return items.length === 0 ? null : [...items]
    }
  })

  pi.on("session_start", (_event, ctx) => {
    shutDown = false
    if (loading !== undefined) {
      // Loaded already (a later session of this process): start it now, as before.
      app()
        .then((session) => session.sessionStart(ctx))
        .catch(reportStartFailure(ctx))
      return
    }
    startContext = ctx
    afterStartUp(() => {
      // Already loading (an early event asked for it) or the session is gone: nothing to do.
      if (shutDown || loading !== undefined) return
      app().catch(reportStartFailure(ctx))
    })
  })

  // Notifications are for the user only and turn triggers only start a turn: no model request
  // ever includes them.
  // The successor a request answers is known at `context`; it is recorded once the request left
  // the process (model-request.ts).
  let answering: string | null = null
  const wire = makeWireWatch()
  pi.on("context", (event) => {
    const messages = withoutHidden(event.messages)
    answering = answeredSuccessor(messages ?? event.messages)
    return messages === undefined ? undefined : { messages }
  })
  pi.on("before_provider_request", (_event, ctx) => {
    const answers = answering
    answering = null
    wire.disarm()
    beforeProviderCall(
      answers,
      (then) => wire.arm(originOf(ctx.model?.baseUrl), then),
      (customType, data) => pi.appendEntry(customType, data)
    )
    return undefined
  })
  pi.on("after_provider_response", () => wire.responded())

  pi.on("agent_start", async (_event, ctx) => (await app()).observe(ctx))
  pi.on("agent_end", async (_event, ctx) => {
    // A request still armed here never left (the provider failed before the call).
    wire.disarm()
    return (await app()).observe(ctx)
  })
  pi.on("agent_settled", async (event, ctx) => {
    // Marked before the first await (the application may still be loading): natural delivery
    // must not send while this handler runs, as Pi holds such a send until it returns (rule 4).
    const done = settleMark.enter()
    try {
      await (await app()).settled(event.aborted, ctx)
    } finally {
      done()
    }
  })
  pi.on("session_shutdown", async (_event, ctx) => {
    shutDown = true
    wire.close()
    if (loading !== undefined) await (await loading).shutdown(ctx)
  })
}
