import { describe, expect, it } from "vitest"
import { fallbackDetails } from "../../src/delivery/fallback.ts"
import { cardLines } from "../../src/extension/message-cards.ts"
import { sanitizeBlock, sanitizeLine } from "../../src/extension/outbound.ts"

const content = "Workflow run r-1 ended: failed.\nFacts JSON {…}\nInspect durable state with workflow status."
const details = {
  schema: "pi-workflows.deferred-turn-message.v1",
  turnIntentId: "deferred-turn:abc",
  runId: "r-1",
  cause: "failed",
  workflowName: "autoimplement",
  observedState: "failed"
}

describe("deferred-turn card", () => {
  it("collapsed shows workflow, state and run, not the model content", () => {
    const text = cardLines({ content, details }, false)
      .map((l) => l.text)
      .join("\n")
    expect(text).toContain("autoimplement")
    expect(text).toContain("failed")
    expect(text).toContain("run r-1")
    expect(text).not.toContain("Facts JSON")
    expect(text).not.toContain("Inspect durable state")
  })

  it("expanded shows the complete content", () => {
    const text = cardLines({ content, details }, true)
      .map((l) => l.text)
      .join("\n")
    for (const line of content.split("\n")) expect(text).toContain(line)
  })

  it("renders restart fields when present", () => {
    const lines = cardLines({ content, details: { ...details, restartCount: 1, restartLimit: 3 } }, false)
    expect(lines.map((l) => l.text).join(" ")).toContain("restarts 1/3")
  })

  it.each([undefined, null, 42, "x", { runId: 7 }, []])("survives malformed details %j", (bad) => {
    const lines = cardLines({ content, details: bad }, true)
    expect(lines[0]?.text).toContain("Workflow turn")
  })

  it("strips terminal escapes and bounds long fields", () => {
    const hostile = { ...details, workflowName: `\u001b[31mred\u001b[0m\u0007${"w".repeat(500)}` }
    const first = cardLines({ content, details: hostile }, false)[0]?.text ?? ""
    expect(first.includes("\u001b") || first.includes("\u0007")).toBe(false)
    expect(first.length).toBeLessThan(140)
  })

  it("reads array content parts", () => {
    const text = cardLines(
      { content: [{ type: "text", text: "part one" }, { type: "image" }], details },
      true
    )
    expect(text.map((l) => l.text)).toContain("part one")
  })
})

describe("sanitize", () => {
  it("keeps newlines in blocks and removes OSC sequences", () => {
    expect(sanitizeBlock("a\n\u001b]0;title\u0007b")).toBe("a\nb")
    expect(sanitizeLine("  a \n b  ")).toBe("a b")
    expect(sanitizeLine(null)).toBe("")
  })

  it("removes bidirectional and zero-width characters from every line, collapsed and expanded", () => {
    const invisible = "\u202e\u2066\u2069\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u061c\u202a"
    const hostile = {
      ...details,
      workflowName: `auto${invisible}implement`,
      runId: `r-${invisible}1`,
      observedState: `fail${invisible}ed`
    }
    for (const expanded of [false, true]) {
      const lines = cardLines({ content: `notice ${invisible}text\nmore`, details: hostile }, expanded)
      for (const line of lines)
        expect(line.text).not.toMatch(/[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/)
      expect(lines[0]?.text).toContain("autoimplement · failed")
    }
    expect(sanitizeBlock(`a${invisible}b`)).toBe("ab")
  })

  it("shows no credential, not even from a message stored before redaction", () => {
    const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    const raw = {
      content: `- error: GITHUB_TOKEN=${token}\nAuthorization: Bearer ${token}`,
      details: { ...details, workflowName: token }
    }
    for (const expanded of [false, true]) {
      const text = cardLines(raw, expanded)
        .map((l) => l.text)
        .join("\n")
      expect(text).not.toContain(token)
    }
  })

  it("bounds fields in characters, never halving a surrogate pair", () => {
    const line = sanitizeLine("😀".repeat(200), 60)
    expect([...line]).toHaveLength(60)
    expect(line).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
  })
})

describe("fallback details", () => {
  it("bound their card fields in characters, redacted first", () => {
    const intent = {
      intentId: "deferred-turn:x",
      runId: "r-1",
      cause: "failed",
      facts: { workflowName: "😀".repeat(300), observedState: `ghp_${"a1".repeat(20)} failed` }
    } as unknown as Parameters<typeof fallbackDetails>[0]
    const details = fallbackDetails(intent)
    expect([...details.workflowName]).toHaveLength(200)
    expect(details.workflowName).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
    expect(details.observedState).toBe("[REDACTED] failed")
  })
})
