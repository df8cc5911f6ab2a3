/**
 * The Pi extension entry (what `pi.extensions` names). It registers the `workflow` tool, the
 * `/workflow` command, the deferred-turn card and the event handlers, and forwards each to the
 * session application (`session-app.ts`), which it imports on first use: Effect, the stores and
 * the engine load after Pi is ready, not during its start-up. The session start work (fallback
 * sync, run recovery) runs in the background for the same reason; every later event waits for
 * it, since the application opens once and every handler goes through it.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { withoutHidden } from "./context-filter.ts"
import { beforeModelRequest } from "./successor-request.ts"
import { registerDeferredTurnRenderer } from "./renderer.ts"
import type { SessionApp } from "./session-app.ts"
import { toolParameters } from "./tool-parameters.ts"

const TOOL_DESCRIPTION =
  "Run and control multi-step workflows. Actions: list (available workflows), start {workflow, input?} " +
  "(queued; it starts after this turn ends and its steps arrive as new messages), status {runId?}, " +
  "cancel {runId?}, submit {requestId, output} (answer a workflow step message), " +
  "progress {requestId, text} (a short progress line for the user while you work on a step), " +
  "restart {runId} (run an ended run again with the exact same workflow and input)."

export default function piWorkflowTurns(pi: ExtensionAPI): void {
  let loading: Promise<SessionApp> | undefined
  const app = (): Promise<SessionApp> => {
    loading ??= import("./session-app.ts").then((module) => module.createSessionApp(pi))
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
      "After workflow start, end the turn: the workflow's steps arrive as new messages.",
      "When a workflow run ends you get one turn to decide what follows; launch at most one workflow in it."
    ],
    parameters: toolParameters,
    execute: async (toolCallId, params, _signal, _onUpdate, ctx) =>
      (await app()).tool(params, ctx, toolCallId)
  })

  pi.registerCommand("workflow", {
    description: "Workflows: list | start <name> [json] | status [runId] | cancel [runId] | pause | resume",
    handler: async (args, ctx) => (await app()).command(args, ctx)
  })

  pi.on("session_start", (_event, ctx) => {
    const started = app().then((session) => session.sessionStart(ctx))
    started.catch((error: unknown) => {
      const text = `pi-workflow-turns could not start: ${error instanceof Error ? error.message : String(error)}`
      if (ctx.hasUI) ctx.ui.notify(text, "error")
      else process.stderr.write(`[pi-workflow-turns] error: ${text}\n`)
    })
  })

  // Notifications are for the user only and turn triggers only start a turn: no model request
  // ever includes them.
  pi.on("context", (event) => {
    const messages = withoutHidden(event.messages)
    beforeModelRequest(messages ?? event.messages, (customType, data) => pi.appendEntry(customType, data))
    return messages === undefined ? undefined : { messages }
  })

  pi.on("agent_start", async (_event, ctx) => (await app()).observe(ctx))
  pi.on("agent_end", async (_event, ctx) => (await app()).observe(ctx))
  pi.on("agent_settled", async (event, ctx) => (await app()).settled(event.aborted, ctx))
  pi.on("session_shutdown", async (_event, ctx) => {
    if (loading !== undefined) await (await loading).shutdown(ctx)
  })
}
