/**
 * The fast in-process path: a real Pi `AgentSession` (inside an `AgentSessionRuntime`) with an
 * extension factory and pi-ai's scripted faux model — no child process, no HTTP (~tens of ms).
 *
 * Lifecycle, as Pi defines it:
 * - `session_start` is emitted by `session.bindExtensions(...)`; `createFauxSession` calls it
 *   (reason `"startup"` unless `sessionStartEvent` says otherwise), so handlers have run when it
 *   resolves. Pass `bind: false` to create the session first and call `bindExtensions()` yourself.
 * - `dispose()` calls `runtime.dispose()`, which aborts, emits `session_shutdown` (reason `"quit"`)
 *   and then disposes the session. `session.dispose()` alone does NOT emit `session_shutdown`.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type AgentSession,
  type AgentSessionEvent,
  type AgentSessionRuntime,
  type CreateAgentSessionRuntimeFactory,
  type CustomMessageEntry,
  createAgentSessionFromServices,
  createAgentSessionRuntime,
  createAgentSessionServices,
  type InlineExtension,
  ModelRuntime,
  type SessionEntry,
  SessionManager,
  type SessionStartEvent,
  SettingsManager
} from "@earendil-works/pi-coding-agent"
import {
  type FauxProviderHandle,
  type FauxResponseFactory,
  type FauxResponseStep,
  fauxAssistantMessage,
  fauxProvider,
  type TranscriptContext
} from "@earendil-works/pi-ai"

export { fauxAssistantMessage, fauxText, fauxToolCall } from "@earendil-works/pi-ai"

export interface FauxSessionOptions {
  /** Extension factories (or named inline extensions) to load, in order. */
  readonly extensions: ReadonlyArray<InlineExtension>
  /**
   * The model's replies, in order; a function step sees the context the model got. When they
   * run out the model answers "ok" (like the mock server), never an error.
   */
  readonly replies?: ReadonlyArray<FauxResponseStep>
  /** Write a session file under `<dir>/sessions` (default: in-memory session). */
  readonly persist?: boolean
  /** Open this existing session file instead of starting a new one (implies persistence). */
  readonly sessionFile?: string
  /** Root for agent dir, sessions and cwd; a fresh temp dir (removed on dispose) by default. */
  readonly dir?: string
  /** Emitted by `bindExtensions`. Default `{ type: "session_start", reason: "startup" }`. */
  readonly sessionStartEvent?: SessionStartEvent
  /** Call `bindExtensions({ mode: "print" })` now (emits `session_start`). Default true. */
  readonly bind?: boolean
}

export interface FauxSession {
  readonly runtime: AgentSessionRuntime
  readonly faux: FauxProviderHandle
  readonly dir: string
  /** The runtime's current session (it changes after new/switch/fork). */
  readonly session: AgentSession
  /** Session events seen since creation, in order. */
  events(): ReadonlyArray<AgentSessionEvent>
  /**
   * Prompt, then `waitForQuiet()`: also runs started from `agent_settled` handlers have ended.
   * Throws if that takes longer than `timeoutMs` (default 10 s).
   */
  prompt(text: string, timeoutMs?: number): Promise<void>
  /**
   * Wait until the session is idle and no run starts for `quietMs` (default 20). Work an
   * `agent_settled` handler requests starts after that event, so `waitForIdle()` alone can return
   * before it. Throws after `timeoutMs` (default 10 s) with the recent event types.
   */
  waitForQuiet(quietMs?: number, timeoutMs?: number): Promise<void>
  /** Emit `session_start` by binding extensions (only needed with `bind: false`). */
  bind(): Promise<void>
  /** All entries of the session (header excluded). */
  entries(): ReadonlyArray<SessionEntry>
  /** Custom messages on the current branch, optionally of one `customType`. */
  customMessages(customType?: string): ReadonlyArray<CustomMessageEntry>
  /** Append replies to the script. */
  enqueue(...steps: ReadonlyArray<FauxResponseStep>): void
  /** How many times the model was called. */
  modelCalls(): number
  /** The context (system prompt, messages, tools) of each model call, in order. */
  contexts(): ReadonlyArray<TranscriptContext>
  /**
   * `runtime.dispose()` (emits `session_shutdown`), then removes the temp dir if we made it.
   * Idempotent. If Pi does not get idle within `timeoutMs` (default 5 s) the session is
   * disposed directly (no `session_shutdown`) and an error is thrown.
   */
  dispose(timeoutMs?: number): Promise<void>
}

/** True if `promise` settles before `deadline` (a `performance.now()` value), false otherwise. */
const beforeDeadline = async (promise: Promise<unknown>, deadline: number): Promise<boolean> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      promise.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), Math.max(0, deadline - performance.now()))
      })
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** Build a session with the given extensions and a scripted faux model. */
export const createFauxSession = async (options: FauxSessionOptions): Promise<FauxSession> => {
  const ownsDir = options.dir === undefined
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "pwt-sdk-"))
  const agentDir = join(dir, "agent")
  const sessionDir = join(dir, "sessions")
  const cwd = join(dir, "work")
  for (const d of [agentDir, sessionDir, cwd]) mkdirSync(d, { recursive: true })

  const faux = fauxProvider()
  const script: Array<FauxResponseStep> = [...(options.replies ?? [])]
  const contexts: Array<TranscriptContext> = []
  // One self-renewing step serves every call: it records the context, falls back to "ok", and
  // yields a macrotask first. The faux model otherwise resolves in microtasks only, so an
  // extension that loops (a follow-up per settle) would starve every timer, test timeouts
  // included, and hang the worker for good.
  const dispatch: FauxResponseFactory = async (context, streamOptions, state, model) => {
    faux.appendResponses([dispatch])
    contexts.push(context)
    await new Promise<void>((resolve) => setImmediate(resolve))
    const step = script.shift() ?? fauxAssistantMessage("ok")
    return typeof step === "function" ? step(context, streamOptions, state, model) : step
  }
  faux.setResponses([dispatch])
  // No models.json and an isolated auth file: only the faux provider exists.
  const modelRuntime = await ModelRuntime.create({ authPath: join(agentDir, "auth.json"), modelsPath: null })
  modelRuntime.registerNativeProvider(faux.provider)
  const settingsManager = SettingsManager.inMemory({
    compaction: { enabled: false },
    retry: { enabled: false }
  })

  const createRuntime: CreateAgentSessionRuntimeFactory = async (factoryOptions) => {
    const services = await createAgentSessionServices({
      cwd: factoryOptions.cwd,
      agentDir: factoryOptions.agentDir,
      modelRuntime,
      settingsManager,
      resourceLoaderOptions: {
        noExtensions: true,
        extensionFactories: [...options.extensions],
        noSkills: true,
        noPromptTemplates: true,
        noContextFiles: true,
        noThemes: true
      }
    })
    const created = await createAgentSessionFromServices({
      services,
      sessionManager: factoryOptions.sessionManager,
      model: faux.getModel(),
      thinkingLevel: "off",
      ...(factoryOptions.sessionStartEvent === undefined
        ? {}
        : { sessionStartEvent: factoryOptions.sessionStartEvent })
    })
    return { ...created, services, diagnostics: services.diagnostics }
  }

  const sessionManager =
    options.sessionFile !== undefined
      ? SessionManager.open(options.sessionFile, sessionDir)
      : options.persist === true
        ? SessionManager.create(cwd, sessionDir)
        : SessionManager.inMemory(cwd)
  const runtime = await createAgentSessionRuntime(createRuntime, {
    cwd,
    agentDir,
    sessionManager,
    ...(options.sessionStartEvent === undefined ? {} : { sessionStartEvent: options.sessionStartEvent })
  })

  const seen: Array<AgentSessionEvent> = []
  let disposed = false
  let subscribed: AgentSession | undefined
  let unsubscribe = (): void => {}
  // Follow the runtime's current session, which new/switch/fork replace.
  const track = (): AgentSession => {
    const current = runtime.session
    if (subscribed !== current) {
      unsubscribe()
      unsubscribe = current.subscribe((event) => {
        seen.push(event)
      })
      subscribed = current
    }
    return current
  }
  track()
  const recentTypes = () =>
    seen
      .slice(-12)
      .map((event) => event.type)
      .join(", ")
  const waitForQuiet = async (quietMs = 20, timeoutMs = 10_000) => {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      const session = track()
      const idle = await beforeDeadline(session.waitForIdle(), deadline)
      if (!idle) {
        // A run loop that never ends (e.g. a follow-up per settle) lands here instead of hanging.
        throw new Error(
          `sdk: not quiet within ${timeoutMs} ms; ${seen.length} events, last: ${recentTypes()}`
        )
      }
      const before = seen.length
      await new Promise<void>((resolve) => setTimeout(resolve, quietMs))
      const started = seen.slice(before).some((event) => event.type === "agent_start")
      if (!started && session.isIdle) return
    }
  }
  const bind = async () => {
    await track().bindExtensions({ mode: "print" })
  }
  if (options.bind ?? true) await bind()

  return {
    runtime,
    faux,
    dir,
    get session() {
      return track()
    },
    events: () => [...seen],
    prompt: async (text, timeoutMs = 10_000) => {
      const deadline = performance.now() + timeoutMs
      // session.prompt() resolves only when queued follow-ups are done too; bound it.
      if (!(await beforeDeadline(track().prompt(text), deadline))) {
        throw new Error(`sdk: prompt did not finish within ${timeoutMs} ms; last events: ${recentTypes()}`)
      }
      await waitForQuiet(20, Math.max(1, deadline - performance.now()))
    },
    waitForQuiet,
    bind,
    entries: () => track().sessionManager.getEntries(),
    customMessages: (customType) =>
      track()
        .sessionManager.getBranch()
        .filter((entry): entry is CustomMessageEntry => entry.type === "custom_message")
        .filter((entry) => customType === undefined || entry.customType === customType),
    enqueue: (...steps) => {
      script.push(...steps)
    },
    modelCalls: () => contexts.length,
    contexts: () => [...contexts],
    dispose: async (timeoutMs = 5_000) => {
      if (disposed) return
      disposed = true
      unsubscribe()
      try {
        // runtime.dispose() aborts and waits for idle; an extension that keeps starting runs
        // never lets it finish, so bound it and then cut the session loose.
        if (!(await beforeDeadline(runtime.dispose(), performance.now() + timeoutMs))) {
          runtime.session.dispose()
          throw new Error(
            `sdk: runtime.dispose() did not finish within ${timeoutMs} ms (an extension keeps starting runs?)`
          )
        }
      } finally {
        if (ownsDir) rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}
