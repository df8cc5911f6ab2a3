/**
 * The extension's outbound boundary: what the live PiSession hands to Pi (`sendMessage`,
 * `ui.notify`, stderr) carries no credential, whatever the core built.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { Effect, ManagedRuntime } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import { shownToolResult } from "../../src/extension/outbound.ts"
import { makePiBridge } from "../../src/extension/pi-session-live.ts"
import { redactedLogs } from "../../src/extension/session-app.ts"
import { PiSession } from "../../src/session/pi-session.ts"

const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
const leak = `GITHUB_TOKEN=${token} Authorization: Bearer ${token}`

const fakePi = () => {
  const sent: Array<unknown> = []
  const pi = { sendMessage: (message: unknown) => sent.push(message) }
  return { sent, pi: pi as unknown as ExtensionAPI }
}

const run = <A>(
  bridge: ReturnType<typeof makePiBridge>,
  use: (s: typeof PiSession.Service) => Effect.Effect<A, unknown>
) => Effect.runPromise(Effect.provide(Effect.flatMap(PiSession, use), bridge.layer))

afterEach(() => {
  vi.restoreAllMocks()
})

describe("outbound boundary", () => {
  it("send: the content and every string in the details, at any depth, are redacted", async () => {
    const { sent, pi } = fakePi()
    const bridge = makePiBridge(pi)
    await run(bridge, (session) =>
      session.send(
        {
          customType: "pi-workflows-deferred-turn",
          content: `- reason: ${leak}`,
          display: true,
          details: { runId: "r-1", nested: { list: [leak, { deep: leak }] }, count: 3 }
        },
        { deliverAs: "followUp", triggerTurn: true }
      )
    )
    expect(sent).toHaveLength(1)
    expect(JSON.stringify(sent)).not.toContain(token)
    expect(sent[0]).toMatchObject({
      customType: "pi-workflows-deferred-turn",
      content: "- reason: GITHUB_TOKEN=[REDACTED] Authorization: Bearer [REDACTED]",
      details: { runId: "r-1", count: 3 }
    })
  })

  it("notify: redacted in Pi's UI and on stderr", async () => {
    const shown: Array<string> = []
    const writes: Array<string> = []
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      writes.push(String(chunk))
      return true
    })
    const { pi } = fakePi()
    const bridge = makePiBridge(pi)
    bridge.setContext({
      hasUI: true,
      ui: { notify: (text: string) => shown.push(text) }
    } as unknown as ExtensionContext)
    await run(bridge, (session) => session.notify(`run failed: ${leak}`, "error"))
    bridge.setContext({ hasUI: false } as unknown as ExtensionContext)
    await run(bridge, (session) => session.notify(`run failed: ${leak}`, "warning"))
    expect(shown).toEqual(["run failed: GITHUB_TOKEN=[REDACTED] Authorization: Bearer [REDACTED]"])
    expect(writes.join("")).toContain("[pi-workflow-turns] warning: run failed: GITHUB_TOKEN=[REDACTED]")
    expect(writes.join("")).not.toContain(token)
  })

  it("tool results: text and details redacted", () => {
    const result = shownToolResult({ text: `status: ${leak}`, details: { error: leak }, isError: false })
    expect(JSON.stringify(result)).not.toContain(token)
  })
})

describe("session runtime logs", () => {
  it("are redacted (the default logger's format and destination)", async () => {
    const lines: Array<string> = []
    vi.spyOn(console, "log").mockImplementation((...args: ReadonlyArray<unknown>) => {
      lines.push(args.map(String).join(" "))
    })
    const runtime = ManagedRuntime.make(redactedLogs)
    await runtime.runPromise(Effect.logWarning(`terminal decision unavailable: ${leak}`))
    await runtime.dispose()
    expect(lines.join("\n")).toContain("level=WARN")
    expect(lines.join("\n")).toContain("GITHUB_TOKEN=[REDACTED]")
    expect(lines.join("\n")).not.toContain(token)
  })
})
