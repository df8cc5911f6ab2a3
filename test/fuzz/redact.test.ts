/**
 * The redactor, fuzzed: a credential of every catalogue shape (secrets.ts) embedded anywhere in
 * arbitrary text never survives, invisible and control characters never do, JSON text stays
 * JSON, ordinary text is kept, and redacting twice changes nothing more.
 */
import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { decide, HANDOFF_STATE, intentRequest, type SourceEvent } from "../../src/domain/event-policy.ts"
import { isControlChar, REDACTED, redactDeep, redactReason, redactText } from "../../src/domain/redact.ts"
import { embedded, secretSample, surrounding } from "./secrets.ts"

const hasControl = (text: string) => [...text].some((c) => isControlChar(c.charCodeAt(0)))

describe("redactText", () => {
  it("removes every catalogue credential wherever it sits in the text", () => {
    fc.assert(
      fc.property(embedded, ({ sample, text }) => {
        const out = redactText(text)
        expect(out, sample.shape).not.toContain(sample.needle)
        expect(out).toContain(REDACTED)
      }),
      { numRuns: 5_000 }
    )
  })

  it("removes them from JSON text and keeps it JSON", () => {
    fc.assert(
      fc.property(fc.array(embedded, { minLength: 1, maxLength: 3 }), surrounding, (items, key) => {
        const value = { [key]: items.map((item) => item.text), nested: { reason: items[0]?.text } }
        for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
          const out = redactText(text)
          for (const { sample } of items) expect(out, sample.shape).not.toContain(sample.needle)
          expect(() => JSON.parse(out)).not.toThrow()
        }
      }),
      { numRuns: 2_000 }
    )
  })

  it("removes them from every string of a nested value (redactDeep)", () => {
    fc.assert(
      fc.property(secretSample, (sample) => {
        const out = JSON.stringify(redactDeep({ a: [{ b: sample.carrier }], [sample.carrier]: 1 }))
        expect(out, sample.shape).not.toContain(sample.needle)
      }),
      { numRuns: 1_000 }
    )
  })

  it("strips control, bidirectional and zero-width characters and is idempotent, for any text", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 300 }),
          embedded.map((e) => e.text)
        ),
        (text) => {
          const out = redactText(text)
          expect(hasControl(out)).toBe(false)
          expect(redactText(out)).toBe(out)
        }
      ),
      { numRuns: 3_000 }
    )
  })

  it("keeps ordinary diagnostics readable", () => {
    for (const text of [
      'step "review" timed out after 1500 ms',
      "scope must be a non-empty string\n\tat line 3",
      "mkdir -p build && gcc -pthread -O2 main.c; find . -print0",
      "NODE_ENV=production PORT=8080 npm start",
      "Basic configuration loaded; token limit: 4096 tokens; author: Ada",
      "run 20261201T040000Z-sk-review-pipeline-0a1b2c3d: sort key: name",
      "commit 0123456789abcdef0123456789abcdef01234567 (aws deploy)"
    ]) {
      expect(redactText(text)).toBe(text)
    }
    expect(redactText("bad\u001b[31m red\u0007")).toBe("bad[31m red")
    expect(redactText("a\u202eb\u2066c\u200bd\ufeffe\u200ef\u061cg")).toBe("abcdefg")
  })

  it("is applied to every reason that goes into stored facts", () => {
    const event: SourceEvent = {
      _tag: "ActiveTurnInterrupted",
      run: {
        runId: "r1",
        workflowRef: "w",
        workflowName: "w",
        targetSessionId: "s1",
        origin: "tool"
      },
      provenance: { cause: "claimLost", nodeId: "a", attemptId: "att", interruption: 0 },
      reason: "failed: GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 \u001b[0m"
    }
    const request = intentRequest(event, decide(event))
    expect(request?.facts.observedState).toBe(HANDOFF_STATE)
    expect(request?.facts.reason).toBe(`failed: GITHUB_TOKEN=${REDACTED} [0m`)
    expect(redactReason).toBe(redactText)
  })
})
