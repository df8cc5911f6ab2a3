/**
 * Rule 4 in the Pi adapter: the entry marks its `agent_settled` handler as running before its
 * first await (the application may still be loading) and clears the mark when the handler
 * returns, however it ends; the live PiSession reports the mark (`settling`) and waits for it
 * (`settleDone`).
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { Effect, Exit, Fiber } from "effect"
import { beforeEach, describe, expect, it, vi } from "vitest"
import { makePiBridge } from "../../src/extension/pi-session-live.ts"
import { makeSettleMark, type SettleMark } from "../../src/extension/settle-mark.ts"
import { PiSession } from "../../src/session/pi-session.ts"

const app = vi.hoisted(() => ({
  mark: undefined as SettleMark | undefined,
  /** Whether the mark was set when the application was created. */
  markedAtLoad: undefined as boolean | undefined,
  /** What the running settle handler waits for. */
  release: undefined as ((fail: boolean) => void) | undefined,
  seenInHandler: [] as Array<boolean>
}))

vi.mock("../../src/extension/session-app.ts", () => ({
  createSessionApp: (_pi: unknown, mark: SettleMark) => {
    app.mark = mark
    app.markedAtLoad = mark.running()
    return {
      tool: async () => ({ content: [], details: {}, isError: false }),
      command: async () => undefined,
      sessionStart: async () => undefined,
      observe: () => undefined,
      settled: async () => {
        app.seenInHandler.push(mark.running())
        const fail = await new Promise<boolean>((resolve) => {
          app.release = resolve
        })
        if (fail) throw new Error("the settle handler failed")
      },
      shutdown: async () => undefined
    }
  }
}))

type Handler = (event: unknown, ctx: ExtensionContext) => unknown

const register = async (): Promise<Map<string, Handler>> => {
  const { default: extension } = await import("../../src/extension/index.ts")
  const handlers = new Map<string, Handler>()
  const pi = {
    on: (event: string, handler: Handler) => handlers.set(event, handler),
    registerTool: () => undefined,
    registerCommand: () => undefined,
    registerMessageRenderer: () => undefined
  }
  extension(pi as unknown as ExtensionAPI)
  return handlers
}

/** Let the running settle handler return (or throw). */
const releaseHandler = (fail: boolean) => app.release?.(fail)
const ctx = { hasUI: false } as unknown as ExtensionContext
const settledEvent = { type: "agent_settled", aborted: false }
const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise<void>((resolve) => setImmediate(resolve))
}

describe("the entry's agent_settled mark", () => {
  beforeEach(() => {
    app.mark = undefined
    app.markedAtLoad = undefined
    app.release = undefined
    app.seenInHandler.length = 0
  })

  it("is set before the application loads and cleared when the handler returns", async () => {
    const handlers = await register()
    const running = handlers.get("agent_settled")?.(settledEvent, ctx) as Promise<void>
    await until(() => app.release !== undefined)
    // The handler was the first event: the mark was already set while the application loaded.
    expect(app.markedAtLoad).toBe(true)
    expect(app.seenInHandler).toEqual([true])
    releaseHandler(false)
    await running
    expect(app.mark?.running()).toBe(false)
  })

  it("is set synchronously, before the handler's first await, and cleared when it throws", async () => {
    const handlers = await register()
    const first = handlers.get("agent_settled")?.(settledEvent, ctx) as Promise<void>
    await until(() => app.release !== undefined)
    releaseHandler(false)
    await first
    const mark = app.mark
    expect(mark?.running()).toBe(false)
    app.release = undefined
    const second = handlers.get("agent_settled")?.(settledEvent, ctx) as Promise<void>
    // No microtask has run yet: only a mark set before the first await is visible here.
    expect(mark?.running()).toBe(true)
    await until(() => app.release !== undefined)
    releaseHandler(true)
    await expect(second).rejects.toThrow("the settle handler failed")
    expect(mark?.running()).toBe(false)
  })
})

describe("the live PiSession's settle state", () => {
  it("reports the mark and completes settleDone only when the last handler returns", async () => {
    const mark = makeSettleMark()
    const bridge = makePiBridge({} as unknown as ExtensionAPI, mark)
    const session = Effect.runSync(Effect.provide(PiSession, bridge.layer))
    expect(Effect.runSync(session.settling)).toBe(false)
    expect(Exit.isSuccess(Effect.runSyncExit(session.settleDone))).toBe(true)
    const leaveFirst = mark.enter()
    const leaveSecond = mark.enter()
    expect(Effect.runSync(session.settling)).toBe(true)
    const waiting = Effect.runFork(session.settleDone)
    leaveFirst()
    leaveFirst() // a second call of the same leave changes nothing
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(waiting.unsafePoll()).toBeNull()
    expect(Effect.runSync(session.settling)).toBe(true)
    leaveSecond()
    expect(Exit.isSuccess(await Effect.runPromise(Fiber.await(waiting)))).toBe(true)
    expect(Effect.runSync(session.settling)).toBe(false)
  })
})
