/**
 * Long texts cut for the model are redacted before the cut: a credential straddling the bound
 * would otherwise survive as a prefix no catalogue rule recognises. Bounds count code points.
 */
import { describe, expect, it } from "vitest"
import { describeStatus } from "../../src/app/replies.ts"
import { MAX_PRESENTATION_CHARS, presentationMessage } from "../../src/engine/messages.ts"

const TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ0123456789"

describe("cut texts are redacted first", () => {
  it("a presentation whose credential straddles the bound shows none of it", () => {
    for (const offset of [30, 20, 12, 8]) {
      const text = `${"a".repeat(MAX_PRESENTATION_CHARS - offset)} ${TOKEN} tail`
      const content = presentationMessage({ runId: "r", state: "completed", text }).content
      expect(content).not.toContain("ghp_")
      expect([...content].length).toBeLessThanOrEqual(MAX_PRESENTATION_CHARS)
    }
    // Code points: 16,000 emoji fit exactly, one more is cut.
    const emoji = "😀".repeat(MAX_PRESENTATION_CHARS)
    expect(presentationMessage({ runId: "r", state: "completed", text: emoji }).content).toBe(emoji)
  })

  it("a status whose JSON is cut at its bound shows no credential prefix", () => {
    const statusWith = (padding: number) =>
      ({
        runId: "r",
        workflowRef: "w",
        state: "failed",
        currentNodeId: null,
        openRequestId: null,
        waitRequestId: null,
        steps: 1,
        maxSteps: 10,
        parkedReason: null,
        condition: "failed",
        stepRecords: [],
        deadlineAt: null,
        error: null,
        padding: "a".repeat(padding),
        note: TOKEN
      }) as unknown as Parameters<typeof describeStatus>[0]
    // Padding that puts the token's start 10 characters before the 16,000-character cut.
    const probe = JSON.stringify(statusWith(0), null, 2)
    const padding = 16_000 - 10 - probe.indexOf(TOKEN)
    expect(JSON.stringify(statusWith(padding), null, 2).indexOf(TOKEN)).toBe(16_000 - 10)
    const text = describeStatus(statusWith(padding), 0)
    expect(text).toContain("…[truncated]")
    expect(text).not.toContain("ghp_")
  })
})
