/**
 * What `serve` answers: the guard's verdict first (guard.ts), then the page and its two assets,
 * and the read-only JSON API the page polls — `/api/runs` (filtered, at most MAX_LIST_LIMIT),
 * `/api/run` (one run's header and restart chain) and the pages of its timeline
 * (`/api/steps`, `/api/intents`, `/api/events`, `cursor` + `limit`). There is no write route.
 * Every JSON body is redacted as a whole (the texts in it were redacted and clipped already):
 * the one boundary, as `shown` is for the CLI's lines.
 */
import { Clock, Effect, type Either, Option } from "effect"
import { isConditionState, STORED_FOR } from "../cli/run-states.ts"
import { redactText } from "../domain/redact.ts"
import { LaunchStore, type LaunchRecord, RESTART_LIMIT } from "../store/launch-store.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { TimelineReads } from "../store/timeline-reads.ts"
import { MAX_LIST_LIMIT } from "../store/turn-intent-store.ts"
import { decide } from "./guard.ts"
import { PAGE_SCRIPT, PAGE_STYLE, pageHtml } from "./page.ts"
import { type BadQuery, intentPage, runQuery, type RunsQuery, runsQuery, seqPage } from "./query.ts"
import type { Reply, Request } from "./server.ts"
import { chainLinks, eventItems, intentItems, runView, stepItems } from "./timeline.ts"

const json = (status: number, value: unknown): Reply => ({
  status,
  type: "json",
  body: redactText(JSON.stringify(value))
})
const refusal = (status: number, message: string, headers?: Record<string, string>): Reply => ({
  ...json(status, { error: message }),
  ...(headers === undefined ? {} : { headers })
})

const listRuns = (query: RunsQuery) =>
  Effect.gen(function* () {
    const reads = yield* TimelineReads
    const now = yield* Clock.currentTimeMillis
    // A condition is decided per run (claim expiry against now): the newest runs, filtered.
    const condition = query.state !== undefined && isConditionState(query.state) ? query.state : undefined
    const stored = condition === undefined ? query.state : STORED_FOR[condition]
    const rows = yield* reads.runs({
      ...(stored === undefined || isConditionState(stored) ? {} : { state: stored }),
      ...(query.workflow === undefined ? {} : { workflow: query.workflow }),
      ...(query.session === undefined ? {} : { session: query.session }),
      ...(query.ageMs === undefined ? {} : { createdSince: new Date(now - query.ageMs).toISOString() }),
      limit: condition === undefined ? query.limit : MAX_LIST_LIMIT
    })
    const views = rows.map((row) => runView(row, now))
    return {
      runs:
        condition === undefined ? views : views.filter((run) => run.kind === condition).slice(0, query.limit)
    }
  })

/** The runs that restarted `runId` in turn (at most the restart limit). */
const restartsOf = (launches: LaunchStore["Type"], runId: string) =>
  Effect.gen(function* () {
    const found: Array<LaunchRecord> = []
    let parent = runId
    for (let i = 0; i < RESTART_LIMIT; i++) {
      const child = yield* launches.childOf(parent)
      if (Option.isNone(child)) break
      found.push(child.value)
      parent = child.value.runId
    }
    return found
  })

const runDetail = (runId: string) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const [row] = yield* (yield* TimelineReads).runs({ runIds: [runId], limit: 1 })
    if (row === undefined) return refusal(404, `no run with ID ${runId.slice(0, 80)}`)
    const launches = yield* LaunchStore
    const chain = chainLinks(
      runId,
      Option.getOrNull(yield* launches.get(runId)),
      yield* restartsOf(launches, runId),
      Option.getOrNull(yield* launches.byTerminal(runId))
    )
    return json(200, { now, run: runView(row, now), chain })
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
        return refusal(404, "no such page")
    }
  })

const ASSETS: Readonly<Record<string, (token: string) => Reply>> = {
  "/": (token) => ({ status: 200, type: "html", body: pageHtml(token) }),
  "/app.js": () => ({ status: 200, type: "js", body: PAGE_SCRIPT }),
  "/app.css": () => ({ status: 200, type: "css", body: PAGE_STYLE }),
  // No icon: asked for with the token, so the browser does not ask without it (a 401).
  "/favicon.ico": () => ({ status: 204, type: "text", body: "" })
}

/** The handler for one server with its access token: every request, refused or answered. */
export const handler = (token: string) =>
  Effect.fn("Serve.request")(function* (request: Request, port: number) {
    yield* Effect.annotateCurrentSpan({ path: request.path, method: request.method })
    const verdict = decide(
      {
        method: request.method,
        host: request.header("host"),
        origin: request.header("origin"),
        authorization: request.header("authorization"),
        queryToken: request.query.get("token")
      },
      { token, port }
    )
    if (verdict._tag === "Refused") {
      return refusal(
        verdict.status,
        verdict.message,
        verdict.status === 405 ? { Allow: "GET, HEAD" } : undefined
      )
    }
    const asset = Object.hasOwn(ASSETS, request.path) ? ASSETS[request.path] : undefined
    if (asset !== undefined) return asset(token)
    return yield* api(request).pipe(
      Effect.catchTags({
        BadQuery: (bad) => Effect.succeed(refusal(400, bad.message)),
        StoreFailure: (failure) =>
          Effect.succeed(
            failure.reason === "Lock"
              ? refusal(503, "the database is busy; the page tries again")
              : refusal(500, `the database could not be read (${failure.operation})`)
          )
      })
    )
  })
