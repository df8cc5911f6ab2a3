/** The credential catalogue, shape by shape: the secret is replaced, its context is kept. */
import { describe, expect, it } from "vitest"
import { isSensitiveName, redactSecrets } from "../../src/domain/redact.ts"

describe("redactSecrets", () => {
  it.each([
    ["GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123", "GITHUB_TOKEN=[REDACTED]"],
    ["token ghp_abcdefghijklmnopqrstuvwxyz0123 used", "token [REDACTED] used"],
    ["Authorization: Bearer abc.def.ghi-123456", "Authorization: Bearer [REDACTED]"],
    ["Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"],
    [
      "curl -H 'x' https://user:hunter2@example.invalid/x",
      "curl -H 'x' https://user:[REDACTED]@example.invalid/x"
    ],
    ['password: "correct horse"', 'password: "[REDACTED]"'],
    ["OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", "OPENAI_API_KEY=[REDACTED]"],
    ["key sk-ant-abcdefghijklmnopqrstu", "key [REDACTED]"],
    ["AKIAABCDEFGHIJKLMNOP in logs", "[REDACTED] in logs"],
    ["slack xoxb-1234567890-abcdef", "slack [REDACTED]"],
    ["jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.c2lnbmF0dXJlMTIz", "jwt [REDACTED]"],
    ["charge sk_live_4eC39HqLyjWDarjtT1zdp7dc failed", "charge [REDACTED] failed"],
    ["npm npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm [REDACTED]"],
    ["glpat-abcdefghij1234567890 rejected", "[REDACTED] rejected"],
    ["aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key=[REDACTED]"],
    ["AWS key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY denied", "AWS key [REDACTED] denied"],
    [
      "post https://hooks.slack.com/services/T0/B0/XXXX failed",
      "post https://hooks.slack.com/[REDACTED] failed"
    ],
    ["https://discord.com/api/webhooks/123/abc-DEF", "https://discord.com/api/webhooks/[REDACTED]"],
    ["mysql -u root -phunter2 app", "mysql -u root -p[REDACTED] app"],
    [
      "tool --password hunter2 --token=abc123 --verbose",
      "tool --password [REDACTED] --token=[REDACTED] --verbose"
    ],
    ['{"api_key": "zzz", "name": "x"}', '{"api_key": "[REDACTED]", "name": "x"}'],
    ["DB_PASS=abc; MYSQL_PWD=def", "DB_PASS=[REDACTED]; MYSQL_PWD=[REDACTED]"],
    ["AIzaSyA1234567890abcdefghijklmnopqrstu", "[REDACTED]"],
    [
      "postgresql://pi:***@localhost/pw (masked already)",
      "postgresql://pi:***@localhost/pw (masked already)"
    ],
    [
      "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123:@github.com/x",
      "git clone https://[REDACTED]@github.com/x"
    ]
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

  it("knows sensitive names, and not our own claim tokens or token counts", () => {
    for (const name of ["GITHUB_TOKEN", "db_password", "apiKey", "STRIPE_KEY", "Authorization", "DB_PASS"])
      expect(isSensitiveName(name), name).toBe(true)
    for (const name of ["claimToken", "deliveryClaimToken", "inputTokens", "author", "key", "session"])
      expect(isSensitiveName(name), name).toBe(false)
  })
})
