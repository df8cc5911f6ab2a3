/**
 * The session application behind the extension entry: loaded on first use (the entry imports
 * it lazily, so Pi starts without evaluating Effect and SQLite). It translates Pi's events and
 * contexts into the service graph of `src/app/layers.ts` and runs it on one Effect runtime,
 * built on first use and disposed (closing the database) at `session_shutdown`. Every decision
 * lives in `src/app/`; this file only forwards, with the process settings it reads
 * (`PI_WORKFLOWS_DEFAULT_TIMEOUT_MS`, the OTLP variables of src/telemetry/otlp-config.ts) and its
 * logger (the one redactor over Effect's).
 */
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { Cause, Effect, Either, Exit, Fiber, Layer, ManagedRuntime, Option, Logger } from "effect"
import { runCommand, type Completion, commandCompletions, parseCommand } from "../app/command.ts"
import { type AppServices, layer as layerApp } from "../app/layers.ts"
import type { Reply } from "../app/replies.ts"
import {
  afterSettle,
  escapedRun,
  holdAfterEscape,
  onSessionStart,
  onShutdown,
  QUIT_GRACE_MS
} from "../app/session-hooks.ts"
import { runTool, decodeToolInput } from "../app/tool.ts"
import { toolCallTrace } from "../telemetry/turn-traces.ts"
import { collectWorkflows } from "../app/workflows.ts"
import { builtinWorkflows } from "../builtins/index.ts"
import type { PiSession } from "../session/pi-session.ts"
import { isPostgresUrl, resolveDbPath } from "../app/db-path.ts"
import { notifyUser, showPanel, shownToolResult, type ToolResult } from "./outbound.ts"
import { makePiBridge, triggerUnansweredTurn } from "./pi-session-live.ts"
import type { SettleMark } from "./settle-mark.ts"
import { loadWorkflowFiles } from "./workflow-files.ts"
import { redactText } from "../domain/redact.ts"
import { layerFromEnv } from "../telemetry/otlp.ts"

/*
 * The session runtime's logs leave through the one redactor: Effect's default logger (same
 * format, same destination), its every line passed through `redactText`, so a run error or a
 * store failure quoted in a warning carries no credential onto the terminal or into a log file.
 */
export const redactedLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.withConsoleLog(Logger.map(Logger.stringLogger, redactText))
)

/** Short lock waits keep the abort path bounded even when another process holds the database. */
const BUSY_TIMEOUT_MS = 1_000

type App = ManagedRuntime.ManagedRuntime<AppServices | PiSession, unknown>

/** The widget `/workflow status` writes into, and its last line. */
const STATUS_PANEL = "pi-workflows-status"
const STATUS_PANEL_HINT = "(/workflow status refreshes this; any other /workflow command closes it)"

export type { ToolResult }

/** What the entry forwards Pi's registrations and events to. */
export interface SessionApp {
  readonly tool: (params: unknown, ctx: ExtensionContext, toolCallId?: string) => Promise<ToolResult>
  readonly command: (args: string, ctx: ExtensionContext) => Promise<void>
  /** Tab completion of `/workflow …` (subcommands, workflow names, run IDs). */
  readonly completions: (prefix: string) => Promise<ReadonlyArray<Completion>>
  readonly sessionStart: (ctx: ExtensionContext) => Promise<void>
  readonly observe: (ctx: ExtensionContext) => void
  readonly settled: (aborted: boolean, ctx: ExtensionContext) => Promise<void>
  readonly shutdown: (ctx: ExtensionContext) => Promise<void>
}

/**
 * Why the application could not be built, for the one notice the user sees: a typed failure
 * (an unreachable database, an incompatible store) in its own words; anything else in full.
 */
const startFailure = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && failure.value instanceof Error && failure.value.message !== "") {
    const tag =
      "_tag" in failure.value && typeof failure.value._tag === "string" ? `${failure.value._tag}: ` : ""
    return `${tag}${failure.value.message}`
  }
  return Cause.pretty(cause)
}

export const createSessionApp = (pi: ExtensionAPI, settleMark?: SettleMark): SessionApp => {
  const bridge = makePiBridge(pi, settleMark)
  let app: App | undefined
  let opening: Promise<App> | undefined
  let held = false
  /** The hold after an unowned abort, waiting out QUIT_GRACE_MS (a quit's shutdown cancels it). */
  let pendingHold: Fiber.RuntimeFiber<boolean, unknown> | undefined

  const notify = (ctx: ExtensionContext, text: string, level: "info" | "warning" | "error") =>
    notifyUser(ctx, text, level)

  /** Build the runtime once per session: discover workflows, open the database, run the layer. */
  const open = (ctx: ExtensionContext): Promise<App> => {
    if (app !== undefined) return Promise.resolve(app)
    opening ??= (async () => {
      const set = collectWorkflows(builtinWorkflows, await loadWorkflowFiles(ctx.cwd))
      for (const error of set.errors) notify(ctx, `workflow load error: ${error}`, "error")
      const location = resolveDbPath(ctx.cwd, process.env)
      if (!isPostgresUrl(location)) mkdirSync(dirname(location), { recursive: true })
      const defaultTimeoutMs = defaultTimeoutFromEnv(process.env)
      const layer = layerApp({
        database: isPostgresUrl(location)
          ? { url: location, busyTimeoutMs: BUSY_TIMEOUT_MS }
          : { filename: location, busyTimeoutMs: BUSY_TIMEOUT_MS },
        workflows: set.entries,
        ...(defaultTimeoutMs === undefined ? {} : { engine: { defaultTimeoutMs } })
      }).pipe(
        Layer.provideMerge(bridge.layer),
        Layer.provideMerge(redactedLogs),
        // Below everything: the exporter's tracer is every span's, and the runtime's disposal at
        // session_shutdown flushes it (bounded); nothing at all without OTEL_EXPORTER_OTLP_ENDPOINT.
        Layer.provide(
          layerFromEnv(process.env, (line) => notify(ctx, `pi-workflow-turns: ${line}`, "warning"))
        )
      )
      const runtime: App = ManagedRuntime.make(layer)
      const built = await runtime.runPromiseExit(runtime.runtimeEffect)
      if (Exit.isFailure(built)) {
        await runtime.dispose()
        throw new Error(startFailure(built.cause))
      }
      app = runtime
      return runtime
    })().finally(() => {
      opening = undefined
    })
    return opening
  }

  /** Run a program on the session's runtime; report (never throw) when it cannot start. */
  const withApp = async (ctx: ExtensionContext, use: (app: App) => Promise<void>) => {
    bridge.setContext(ctx)
    let runtime: App
    try {
      runtime = await open(ctx)
    } catch (error) {
      notify(
        ctx,
        `pi-workflow-turns could not start: ${error instanceof Error ? error.message : String(error)}`,
        "error"
      )
      return
    }
    await use(runtime)
  }

  return {
    tool: async (params, ctx, toolCallId) => {
      const input = decodeToolInput(params)
      if (Either.isLeft(input)) return shownToolResult({ text: input.left, isError: true, details: {} })
      let reply: Reply = {
        text: "pi-workflow-turns is not available in this session",
        isError: true,
        details: {}
      }
      await withApp(ctx, async (runtime) => {
        const call = toolCallId === undefined ? {} : { toolCallId }
        // The call is the root of its turn's trace (telemetry/turn-traces.ts).
        reply = await runtime.runPromise(
          runTool(input.right, call).pipe(toolCallTrace(input.right._tag, call))
        )
      })
      return shownToolResult(reply)
    },

    completions: async (prefix) => {
      // Only once the session's runtime is open (it opens right after Pi's start-up).
      if (app === undefined) return []
      return app.runPromise(commandCompletions(prefix))
    },

    command: async (args, ctx) => {
      const input = parseCommand(args)
      if (Either.isLeft(input)) {
        notify(ctx, input.left, "warning")
        return
      }
      await withApp(ctx, async (runtime) => {
        const reply = await runtime.runPromise(runCommand(input.right))
        // Status output stays above the editor (a notice would be replaced by the next one);
        // the next /workflow command replaces or closes it.
        if (input.right._tag === "status" && !reply.isError) {
          showPanel(ctx, STATUS_PANEL, `${reply.text}\n${STATUS_PANEL_HINT}`)
        } else {
          showPanel(ctx, STATUS_PANEL, undefined)
          notify(ctx, reply.text, reply.isError ? "error" : "info")
        }
        if (reply.releaseHold) {
          held = false
          bridge.setUserHold(false)
        }
        if (reply.activate && ctx.isIdle()) await runtime.runPromise(afterSettle(held))
      })
    },

    sessionStart: async (ctx) => {
      bridge.setShuttingDown(false)
      await withApp(ctx, async (runtime) => {
        const outcome = await runtime.runPromise(onSessionStart)
        // The hold after Escape is durable: a restarted session keeps holding until resume.
        if (outcome.userHold) {
          held = true
          bridge.setUserHold(true)
          return
        }
        // After branch repair and the owed deliveries: a successor written but never answered.
        triggerUnansweredTurn(pi, ctx)
      })
    },

    observe: (ctx) => bridge.setContext(ctx),

    settled: async (aborted, ctx) => {
      await withApp(ctx, async (runtime) => {
        const escaped = await runtime.runPromise(escapedRun(aborted))
        // Nothing automatic follows the abort from here on, whether Escape or quit.
        if (Option.isSome(escaped)) {
          held = true
          bridge.setUserHold(true)
        }
        // Release what waited for this turn to end only after the hold decision is in place.
        bridge.settled()
        await runtime.runPromise(afterSettle(held, { aborted }))
        if (Option.isNone(escaped)) return
        // Pi's quit aborts like Escape, then shuts down at once: the durable hold waits for that
        // shutdown first (session-hooks.ts QUIT_GRACE_MS), and once begun it completes.
        pendingHold = runtime.runFork(
          Effect.delay(Effect.uninterruptible(holdAfterEscape(escaped.value)), QUIT_GRACE_MS).pipe(
            Effect.tap((holds) =>
              Effect.sync(() => {
                // The run moved on meanwhile: nothing is held.
                if (!holds) {
                  held = false
                  bridge.setUserHold(false)
                }
              })
            )
          )
        )
      })
    },

    shutdown: async (ctx) => {
      bridge.setContext(ctx)
      bridge.setShuttingDown(true)
      const runtime = app ?? (opening === undefined ? undefined : await opening.catch(() => undefined))
      app = undefined
      if (runtime === undefined) return
      // A quit right after its own abort: no hold; the shutdown parks the run (`parked (shutdown)`).
      if (pendingHold !== undefined)
        await runtime.runPromise(Fiber.interrupt(pendingHold)).catch(() => undefined)
      await runtime.runPromise(onShutdown).catch(() => undefined)
      await runtime.dispose()
    }
  }
}

/**
 * `PI_WORKFLOWS_DEFAULT_TIMEOUT_MS`: the limit of nodes that omit `timeoutMs` in this Pi
 * process (default 15 minutes). Explicit limits are untouched. It exists so an operator, or an
 * end-to-end test, can make stages that use the default time out sooner.
 */
export class InvalidDefaultTimeout extends Error {
  override readonly name = "InvalidDefaultTimeout"
}

/** The configured default, or undefined for the engine's own. */
export const defaultTimeoutFromEnv = (env: {
  readonly PI_WORKFLOWS_DEFAULT_TIMEOUT_MS?: string | undefined
}): number | undefined => {
  const raw = env.PI_WORKFLOWS_DEFAULT_TIMEOUT_MS
  if (raw === undefined || raw === "") return undefined
  const ms = Number(raw)
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(ms) || ms <= 0) {
    throw new InvalidDefaultTimeout(
      `PI_WORKFLOWS_DEFAULT_TIMEOUT_MS must be a positive whole number of milliseconds, got "${raw}"`
    )
  }
  return ms
}
