/**
 * The extension entry defers loading the session application until Pi has started (docs/bench.md,
 * start-up): `session_start` must return without loading it, and deferring must lose or reorder
 * nothing — the session start work runs before any other handler's call, even one that arrives
 * before the deferred load begins, and a session that shuts down first never loads it.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { beforeEach, describe, expect, it, vi } from "vitest"

const calls: Array<string> = []
let created = 0

vi.mock("../../src/extension/session-app.ts", () => ({
  createSessionApp: () => {
    created++
    calls.push("load")
    return {
      tool: async () => {
        calls.push("tool")
        return { content: [], details: {}, isError: false }
      },
      command: async () => {
        calls.push("command")
      },
      sessionStart: async () => {
        calls.push("sessionStart")
      },
      observe: () => {
        calls.push("observe")
      },
      settled: async () => {
        calls.push("settled")
      },
      shutdown: async () => {
        calls.push("shutdown")
      }
    }
  }
}))

type Handler = (event: unknown, ctx: ExtensionContext) => unknown

type Execute = (
  id: string,
  params: unknown,
  signal: undefined,
  onUpdate: undefined,
  ctx: ExtensionContext
) => unknown

interface Registered {
  readonly handlers: Map<string, Handler>
  tool: Execute | undefined
}

const load = async (): Promise<Registered> => {
  const { default: extension } = await import("../../src/extension/index.ts")
  const registered: Registered = { handlers: new Map(), tool: undefined }
  const pi = {
    on: (event: string, handler: Handler) => registered.handlers.set(event, handler),
    registerTool: (tool: { execute: Execute }) => {
      registered.tool = tool.execute
    },
    registerCommand: () => undefined,
    registerMessageRenderer: () => undefined
  }
  extension(pi as unknown as ExtensionAPI)
  return registered
}

const ctx = { hasUI: false } as unknown as ExtensionContext
const emit = (registered: Registered, event: string) => registered.handlers.get(event)?.({ type: event }, ctx)
const turnOfTheLoop = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)))
const settle = async () => {
  for (let i = 0; i < 3; i++) await turnOfTheLoop()
}

describe("extension entry start-up", () => {
  beforeEach(() => {
    calls.length = 0
    created = 0
  })

  it("session_start returns without loading the application; it loads right after, and starts the session", async () => {
    const registered = await load()
    await emit(registered, "session_start")
    expect(calls).toEqual([])
    await settle()
    expect(calls).toEqual(["load", "sessionStart"])
  })

  it("a tool call before the deferred load waits for it and runs after the session start work", async () => {
    const registered = await load()
    await emit(registered, "session_start")
    const result = registered.tool?.("call-1", { action: "list" }, undefined, undefined, ctx)
    const agentStart = emit(registered, "agent_start")
    await Promise.all([result, agentStart])
    await settle()
    expect(calls).toEqual(["load", "sessionStart", "tool", "observe"])
    expect(created).toBe(1)
  })

  it("a session that shuts down before the deferred load never loads the application", async () => {
    const registered = await load()
    await emit(registered, "session_start")
    await emit(registered, "session_shutdown")
    await settle()
    expect(calls).toEqual([])
  })
})
