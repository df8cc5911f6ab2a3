/**
 * The `serve` API's input and the page's weight: every parameter is bounded and checked, a bad
 * one is a short message (never an echo of what was sent), and HTML + CSS + JS stay within the
 * page budget docs/cli.md states.
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { PAGE_BUDGET, PAGE_SCRIPT, PAGE_STYLE, pageHtml } from "../../src/serve/page.ts"
import { ageMs, DEFAULT_PAGE, intentPage, runQuery, runsQuery, seqPage } from "../../src/serve/query.ts"
import { MAX_PAGE } from "../../src/store/timeline-reads.ts"
import { MAX_LIST_LIMIT } from "../../src/store/turn-intent-store.ts"
import { newToken } from "../../src/serve/guard.ts"

const q = (text: string) => new URLSearchParams(text)
const bad = <A, E extends { readonly message: string }>(result: Either.Either<A, E>): string =>
  Either.match(result, { onLeft: (e) => e.message, onRight: () => "accepted" })

describe("the serve API's parameters", () => {
  it("the runs filter: state (stored or condition), workflow, session, age and limit", () => {
    expect(Either.getOrThrow(runsQuery(q("token=t")))).toEqual({ limit: 50 })
    expect(
      Either.getOrThrow(runsQuery(q("state=held&workflow=deploy&session=s-1&age=7d&limit=1000&token=t")))
    ).toEqual({
      state: "held",
      workflow: "deploy",
      session: "s-1",
      ageMs: 7 * 86_400_000,
      limit: MAX_LIST_LIMIT
    })
    expect(Either.getOrThrow(runsQuery(q("state=&workflow=%20")))).toEqual({ limit: 50 })
    expect(ageMs("30m")).toBe(1_800_000)
    expect(ageMs("12h")).toBe(43_200_000)
    expect(ageMs("1w")).toBeNull()
  })

  it("bad input is one short message naming the parameter; what was sent is quoted at most 24 characters", () => {
    expect(bad(runsQuery(q("limit=0")))).toBe(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got "0"`)
    expect(bad(runsQuery(q("limit=1001")))).toContain("limit must be an integer from 1 to 1000")
    expect(bad(runsQuery(q("limit=1e3")))).toContain("limit must be an integer")
    expect(bad(runsQuery(q("limit=-1")))).toContain("limit must be an integer")
    expect(bad(runsQuery(q("state=sleeping")))).toMatch(
      /^state must be one of queued, running, .*paused, got "sleeping"$/
    )
    expect(bad(runsQuery(q("age=forever")))).toBe('age must be like 30m, 12h or 7d, got "forever"')
    expect(bad(runsQuery(q("colour=red")))).toBe('unknown parameter "colour"')
    expect(bad(runsQuery(q("state=failed&state=running")))).toBe('parameter "state" given twice')
    const long = `workflow=${"w".repeat(5_000)}`
    expect(bad(runsQuery(q(long)))).toBe('parameter "workflow" is too long')
    const echoed = bad(runsQuery(q(`state=${"s".repeat(1_000)}`)))
    expect(echoed.length).toBeLessThan(250)
  })

  it("timeline pages: a run ID, a cursor the previous page gave and a bounded limit", () => {
    expect(Either.getOrThrow(seqPage(q("id=run-1")))).toEqual({
      runId: "run-1",
      cursor: 0,
      limit: DEFAULT_PAGE
    })
    expect(Either.getOrThrow(seqPage(q("id=run-1&cursor=20&limit=500")))).toEqual({
      runId: "run-1",
      cursor: 20,
      limit: MAX_PAGE
    })
    expect(bad(seqPage(q("id=run-1&limit=501")))).toBe(
      `limit must be an integer from 1 to ${MAX_PAGE}, got "501"`
    )
    expect(bad(seqPage(q("id=run-1&cursor=abc")))).toContain("cursor must be an integer")
    expect(bad(seqPage(q("cursor=1")))).toBe("id must be a run ID (1 to 512 characters)")
    expect(bad(seqPage(q(`id=${"r".repeat(513)}`)))).toBe("id must be a run ID (1 to 512 characters)")
    expect(bad(runQuery(q("id=run-1&cursor=1")))).toBe('unknown parameter "cursor"')
    const cursor = JSON.stringify(["2026-01-01T00:00:00.000Z", "deferred-turn:abc"])
    expect(Either.getOrThrow(intentPage(q(`id=run-1&cursor=${encodeURIComponent(cursor)}`))).cursor).toEqual([
      "2026-01-01T00:00:00.000Z",
      "deferred-turn:abc"
    ])
    expect(Either.getOrThrow(intentPage(q("id=run-1"))).cursor).toBeNull()
    expect(bad(intentPage(q("id=run-1&cursor=%5B1%2C2%5D")))).toBe(
      'cursor must be one an intent page gave, got "[1,2]"'
    )
    expect(bad(intentPage(q("id=run-1&cursor=not-json")))).toContain("cursor must be one an intent page gave")
  })
})

describe("the serve page", () => {
  it(`HTML, CSS and JS together stay within the page budget (${PAGE_BUDGET} bytes)`, () => {
    const weight = [pageHtml(newToken()), PAGE_STYLE, PAGE_SCRIPT].reduce(
      (sum, text) => sum + Buffer.byteLength(text),
      0
    )
    expect(weight).toBeLessThanOrEqual(PAGE_BUDGET)
  })

  it("the HTML has no inline script or style, and names its assets with the token", () => {
    const token = newToken()
    const html = pageHtml(token)
    expect(html).not.toMatch(/<script>|<style|\sstyle=|\son[a-z]+=/i)
    expect(html).toContain(`<script src="/app.js?token=${token}"></script>`)
    expect(html).toContain(`<link rel="stylesheet" href="/app.css?token=${token}">`)
    // The script never writes markup from text.
    expect(PAGE_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/)
  })
})
