/** Credential shapes are replaced; ordinary text survives. */
import { describe, expect, it } from "vitest"
import { redactSecrets } from "../../src/domain/redact.ts"

describe("redactSecrets", () => {
  it.each([
    ["GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123", "GITHUB_TOKEN=[redacted]"],
    ["token ghp_abcdefghijklmnopqrstuvwxyz0123 used", "token [redacted] used"],
    ["Authorization: Bearer abc.def.ghi-123456", "Authorization: [redacted]"],
    [
      "curl -H 'x' https://user:hunter2@example.invalid/x",
      "curl -H 'x' https://user:[redacted]@example.invalid/x"
    ],
    ['password: "correct horse"', "password: [redacted]"],
    ["OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", "OPENAI_API_KEY=[redacted]"],
    ["key sk-ant-abcdefghijklmnopqrstu", "key [redacted]"],
    ["AKIAABCDEFGHIJKLMNOP in logs", "[redacted] in logs"],
    ["slack xoxb-1234567890-abcdef", "slack [redacted]"],
    ["jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.c2lnbmF0dXJlMTIz", "jwt [redacted]"]
  ])("%s", (input, expected) => {
    expect(redactSecrets(input)).toBe(expected)
  })

  it("removes whole private-key blocks, terminated or not", () => {
    const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAB3Nza\nmore\n-----END OPENSSH PRIVATE KEY-----"
    expect(redactSecrets(`before\n${key}\nafter`)).toBe("before\n[redacted]\nafter")
    expect(redactSecrets("x -----BEGIN RSA PRIVATE KEY-----\nMIIE")).toBe("x [redacted]")
  })

  it("keeps ordinary output", () => {
    const text = "All 12 checks passed; author: Ada; commit 1a2b3c4d; see https://example.invalid/pr/4"
    expect(redactSecrets(text)).toBe(text)
  })
})
