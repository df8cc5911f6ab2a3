/**
 * What `serve` answers, after the guard (guard.ts): the page and its assets, and the read-only
 * JSON API the page polls: `/api/runs` (filtered, at most MAX_LIST_LIMIT), `/api/run` (one
 * run and its restart chain) and its timeline's pages (`/api/steps`, `/api/intents`,
 * `/api/events`: `cursor` + `limit`). No route writes. Each JSON body is redacted whole, the
 * API's one output boundary (as `shown` is for the CLI's lines).
 */
import { Clock, Effect, type Either, Option } from "effect"
import { keptBy, listingFor } from "../cli/run-states.ts"
import { sentFor } from "../cli/views.ts"
import { redactText } from "../domain/redact.ts"
import { type LaunchRecord, LaunchStore, RESTART_LIMIT } from "../store/launch-store.ts"
import { remindersSent } from "../store/operator-reads.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { TimelineReads } from "../store/timeline-reads.ts"
import { decide } from "./guard.ts"
import { PAGE_SCRIPT, PAGE_STYLE, pageHtml } from "./page.ts"
import { type BadQuery, intentPage, runQuery, type RunsQuery, runsQuery, seqPage } from "./query.ts"
import type { Reply, Request } from "./server.ts"
import { chainLinks, eventItems, intentItems, runView, stepItems } from "./timeline.ts"

const json = (status: number, value: unknown, headers?: Record<string, string>): Reply => ({
  status,
  type: "json",
  body: redactText(JSON.stringify(value)),
  ...(headers === undefined ? {} : { headers })
})
const refused = (status: number, error: string, headers?: Record<string, string>) =>
  json(status, { error }, headers)

const listRuns = (query: RunsQuery) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    // As `runs --state` does it.
    const listing = listingFor(query.state, query.limit)
    const rows = yield* (yield* TimelineReads).runs({
      ...(listing.stored === undefined ? {} : { state: listing.stored }),
      ...(query.workflow === undefined ? {} : { workflow: query.workflow }),
      ...(query.session === undefined ? {} : { session: query.session }),
      ...(query.ageMs === undefined ? {} : { createdSince: new Date(now - query.ageMs).toISOString() }),
      limit: listing.listLimit
    })
    const reminders = yield* remindersSent(rows.flatMap((run) => run.currentAttemptId ?? []))
    const views = rows.map((run) => runView(run, now, sentFor(run, reminders)))
    return { runs: keptBy(listing, views, (run) => run.kind, query.limit) }
  })

const runDetail = (runId: string) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const [run] = yield* (yield* TimelineReads).runs({ runId, limit: 1 })
    if (run === undefined) return refused(404, `no run with ID ${runId.slice(0, 80)}`)
    const launches = yield* LaunchStore
    const restarts: Array<LaunchRecord> = []
    for (let parent = runId; restarts.length < RESTART_LIMIT; ) {
      const child = yield* launches.childOf(parent)
      if (Option.isNone(child)) break
      restarts.push(child.value)
      parent = child.value.runId
    }
    const own = Option.getOrNull(yield* launches.get(runId))
    const chain = chainLinks(runId, own, restarts, Option.getOrNull(yield* launches.byTerminal(runId)))
    const reminders = yield* remindersSent(run.currentAttemptId === null ? [] : [run.currentAttemptId])
    return json(200, { now, run: runView(run, now, sentFor(run, reminders)), chain })
  })

/** A parsed query's read, answered with the time it was read at. */
const answer = <Q, A extends object, R>(
  parsed: Either.Either<Q, BadQuery>,
  read: (query: Q) => Effect.Effect<A, StoreFailure, R>
) =>
  Effect.gen(function* () {
    const value = yield* read(yield* parsed)
    return json(200, { now: yield* Clock.currentTimeMillis, ...value })
  })

const api = (request: Request) =>
  Effect.gen(function* () {
    const reads = yield* TimelineReads
    const q = request.query
    switch (request.path) {
      case "/api/runs":
        return yield* answer(runsQuery(q), listRuns)
      case "/api/run":
        return yield* runDetail(yield* runQuery(q))
      case "/api/steps":
        return yield* answer(seqPage(q), (p) =>
          Effect.map(reads.steps(p.runId, p.cursor, p.limit), stepItems)
        )
      case "/api/intents":
        return yield* answer(intentPage(q), (p) =>
          Effect.map(reads.intents(p.runId, p.cursor, p.limit), intentItems)
        )
      case "/api/events":
        return yield* answer(seqPage(q), (p) =>
          Effect.map(reads.events(p.runId, p.cursor, p.limit), eventItems)
        )
      default:
        return refused(404, "no such page")
    }
  })

const ASSETS: Readonly<Record<string, (token: string) => Reply>> = {
  "/": (token) => ({ status: 200, type: "html", body: pageHtml(token) }),
  "/app.js": () => ({ status: 200, type: "js", body: PAGE_SCRIPT }),
  "/app.css": () => ({ status: 200, type: "css", body: PAGE_STYLE }),
  // Asked for with the token (the page names it), so the browser never asks without it.
  "/favicon.ico": () => ({ status: 204, type: "text", body: "" })
}

/** Every request to the server with this access token: refused, or answered. */
export const handler = (token: string) =>
  Effect.fn("Serve.request")(function* (request: Request, port: number) {
    yield* Effect.annotateCurrentSpan({ path: request.path, method: request.method })
    const header = request.header
    const verdict = decide(
      {
        method: request.method,
        host: header("host"),
        origin: header("origin"),
        authorization: header("authorization"),
        queryToken: request.query.get("token")
      },
      { token, port }
    )
    if (verdict._tag === "Refused") {
      return refused(
        verdict.status,
        verdict.message,
        verdict.status === 405 ? { Allow: "GET, HEAD" } : undefined
      )
    }
    const asset = Object.hasOwn(ASSETS, request.path) ? ASSETS[request.path] : undefined
    if (asset !== undefined) return asset(token)
    return yield* api(request).pipe(
      Effect.catchTags({
        BadQuery: (bad) => Effect.succeed(refused(400, bad.message)),
        StoreFailure: (failure) =>
          Effect.succeed(
            failure.reason === "Lock"
              ? refused(503, "the database is busy; the page tries again")
              : refused(500, `the database could not be read (${failure.operation})`)
          )
      })
    )
  })
