/** The `serve` guard, decided without a socket: who gets an answer and who a refusal. */
import { describe, expect, it } from "vitest"
import { type Asked, decide, newToken, sameToken } from "../../src/serve/guard.ts"

const token = newToken()
const port = 4711
const asked = (overrides: Partial<Asked> = {}): Asked => ({
  method: "GET",
  host: `127.0.0.1:${port}`,
  origin: undefined,
  authorization: undefined,
  queryToken: token,
  ...overrides
})
const verdict = (overrides: Partial<Asked>) => decide(asked(overrides), { token, port })
const status = (overrides: Partial<Asked>) => {
  const v = verdict(overrides)
  return v._tag === "Allowed" ? 200 : v.status
}

describe("the serve guard", () => {
  it("a token is at least 128 random bits, URL-safe, and new each time", () => {
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(newToken()).not.toBe(token)
  })

  it("allows the right token in the query or as a Bearer header, on either own host name", () => {
    expect(status({})).toBe(200)
    expect(status({ queryToken: null, authorization: `Bearer ${token}` })).toBe(200)
    expect(status({ host: `localhost:${port}` })).toBe(200)
    expect(status({ host: `LOCALHOST:${port}`, origin: `http://localhost:${port}` })).toBe(200)
    expect(status({ method: "HEAD" })).toBe(200)
  })

  it("refuses a missing or wrong token (401)", () => {
    expect(status({ queryToken: null })).toBe(401)
    expect(status({ queryToken: "" })).toBe(401)
    expect(status({ queryToken: `${token}x` })).toBe(401)
    expect(status({ queryToken: token.slice(0, -1) })).toBe(401)
    expect(status({ queryToken: null, authorization: `Basic ${token}` })).toBe(401)
    expect(status({ queryToken: null, authorization: "Bearer wrong" })).toBe(401)
    // A Bearer header, when present, is the token that counts.
    expect(status({ queryToken: "wrong", authorization: `Bearer ${token}` })).toBe(200)
  })

  it("refuses a foreign or missing Host (403: DNS rebinding), before the token is looked at", () => {
    expect(status({ host: `evil.example:${port}` })).toBe(403)
    expect(status({ host: "127.0.0.1" })).toBe(403)
    expect(status({ host: `127.0.0.1:${port + 1}` })).toBe(403)
    expect(status({ host: `127.0.0.2:${port}` })).toBe(403)
    expect(status({ host: undefined })).toBe(403)
    expect(status({ host: `evil.example:${port}`, queryToken: null })).toBe(403)
  })

  it("refuses an Origin that is not the page's own (403), including a null one", () => {
    expect(status({ origin: "http://evil.example" })).toBe(403)
    expect(status({ origin: "null" })).toBe(403)
    expect(status({ origin: `https://127.0.0.1:${port}` })).toBe(403)
    // The same port under the other name is another origin.
    expect(status({ origin: `http://localhost:${port}` })).toBe(403)
    expect(status({ origin: `http://127.0.0.1:${port}` })).toBe(200)
  })

  it("serves only GET and HEAD (405), whatever the token", () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"]) {
      expect(status({ method })).toBe(405)
    }
    const refused = verdict({ method: "POST" })
    expect(refused._tag === "Refused" && refused.message).toBe("only GET and HEAD are served")
  })

  it("compares tokens of any length without throwing", () => {
    expect(sameToken(token, token)).toBe(true)
    expect(sameToken("", token)).toBe(false)
    expect(sameToken("x".repeat(10_000), token)).toBe(false)
  })
})
