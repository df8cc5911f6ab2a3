/** Credential shapes are replaced; ordinary text survives. */
import { describe, expect, it } from "vitest"
import { redactSecrets } from "../../src/domain/redact.ts"

describe("redactSecrets", () => {
  it.each([
    ["GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123", "GITHUB_TOKEN=[REDACTED]"],
    ["token ghp_abcdefghijklmnopqrstuvwxyz0123 used", "token [REDACTED] used"],
    ["Authorization: Bearer abc.def.ghi-123456", "Authorization: [REDACTED] [REDACTED]"],
    [
      "curl -H 'x' https://user:hunter2@example.invalid/x",
      "curl -H 'x' https://[REDACTED]@example.invalid/x"
    ],
    ['password: "correct horse"', "password: [REDACTED]"],
    ["OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", "OPENAI_API_KEY=[REDACTED]"],
    ["key sk-ant-abcdefghijklmnopqrstu", "key [REDACTED]"],
    ["AKIAABCDEFGHIJKLMNOP in logs", "[REDACTED] in logs"],
    ["slack xoxb-1234567890-abcdef", "slack [REDACTED]"],
    ["jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.c2lnbmF0dXJlMTIz", "jwt [REDACTED]"]
  ])("%s", (input, expected) => {
    expect(redactSecrets(input)).toBe(expected)
  })

  it("removes whole private-key blocks, terminated or not", () => {
    const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAB3Nza\nmore\n-----END OPENSSH PRIVATE KEY-----"
    expect(redactSecrets(`before\n${key}\nafter`)).toBe("before\n[REDACTED]\nafter")
    expect(redactSecrets("x -----BEGIN RSA PRIVATE KEY-----\nMIIE")).toBe("x [REDACTED]")
  })

  it("keeps ordinary output", () => {
    const text = "All 12 checks passed; author: Ada; commit 1a2b3c4d; see https://example.invalid/pr/4"
    expect(redactSecrets(text)).toBe(text)
  })
})
