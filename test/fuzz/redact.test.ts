/**
 * Reason redaction, fuzzed: a credential of any common shape embedded anywhere in arbitrary
 * text never survives into the stored facts, control characters never do, ordinary text is
 * kept, and redacting twice changes nothing more.
 */
import { FastCheck as fc } from "effect"
import { describe, expect, it } from "vitest"
import { HANDOFF_STATE, intentRequest } from "../../src/domain/intent-request.ts"
import { decide } from "../../src/domain/event-policy.ts"
import { isControlChar, REDACTED, redactReason } from "../../src/domain/redact.ts"
import type { SourceEvent } from "../../src/domain/source-event.ts"

const alnum = fc.stringMatching(/^[A-Za-z0-9]{24,40}$/)
const b64 = fc.stringMatching(/^[A-Za-z0-9+/]{40,80}$/)

/** [the secret part that must vanish, the text that carries it] */
const secret: fc.Arbitrary<readonly [string, string]> = fc.oneof(
  alnum.map((s) => [`sk-${s}`, `sk-${s}`] as const),
  alnum.map((s) => [`ghp_${s}`, `ghp_${s}`] as const),
  alnum.map((s) => [`xoxb-${s}`, `xoxb-${s}`] as const),
  fc.stringMatching(/^[0-9A-Z]{16}$/).map((s) => [`AKIA${s}`, `AKIA${s}`] as const),
  alnum.map((s) => [s, `Authorization: Bearer ${s}`] as const),
  alnum.map((s) => [s, `bearer ${s}`] as const),
  fc
    .tuple(alnum, alnum, alnum)
    .map(([a, b, c]) => [`eyJ${a}.eyJ${b}.${c}`, `token eyJ${a}.eyJ${b}.${c}`] as const),
  b64.map((s) => [s, `-----BEGIN RSA PRIVATE KEY-----\n${s}\n${s}\n-----END RSA PRIVATE KEY-----`] as const),
  b64.map((s) => [s, `-----BEGIN OPENSSH PRIVATE KEY-----\n${s}`] as const),
  fc
    .tuple(fc.stringMatching(/^[A-Z][A-Z0-9_]{2,12}$/), alnum)
    .map(([name, value]) => [value, `${name}=${value}`] as const),
  alnum.map((s) => [s, `export OPENAI_API_KEY="${s}"`] as const),
  alnum.map((s) => [s, `{"api_key": "${s}"}`] as const),
  alnum.map((s) => [s, `password: ${s}`] as const),
  alnum.map((s) => [s, `https://user:${s}@example.invalid/x`] as const)
)

const filler = fc.string({ maxLength: 60 }).map((s) => s.replace(/[A-Za-z0-9_=:+/.-]/g, " "))
const hasControl = (text: string) => [...text].some((c) => isControlChar(c.charCodeAt(0)))

describe("redactReason", () => {
  it("removes every credential shape wherever it sits in the text", () => {
    fc.assert(
      fc.property(filler, secret, filler, (before, [needle, carrier], after) => {
        const out = redactReason(`${before} ${carrier} ${after}`)
        expect(out).not.toContain(needle)
        expect(out).toContain(REDACTED)
      }),
      { numRuns: 2_000 }
    )
  })

  it("strips control characters and is idempotent, for any text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => {
        const out = redactReason(text)
        expect(hasControl(out)).toBe(false)
        expect(redactReason(out)).toBe(out)
      }),
      { numRuns: 2_000 }
    )
  })

  it("keeps ordinary diagnostics readable", () => {
    expect(redactReason('step "review" timed out after 1500 ms')).toBe(
      'step "review" timed out after 1500 ms'
    )
    expect(redactReason("scope must be a non-empty string\n\tat line 3")).toBe(
      "scope must be a non-empty string\n\tat line 3"
    )
    expect(redactReason("bad\u001b[31m red\u0007")).toBe("bad[31m red")
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
  })
})
