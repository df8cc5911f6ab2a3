/**
 * `pi-workflow-turns serve` over real HTTP: the built bin in a child process on a SQLite file the
 * real stores wrote, its printed URL read from stdout. Refusals (no or a wrong token 401, a
 * foreign Host or Origin 403, anything but GET/HEAD 405), the safety headers on every reply, the
 * JSON API's answers and bad input (400), and the GitHub token in a failed step's error, a run's
 * error, an event and a waiting question never in any response. SIGTERM ends it with exit 0.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SECRET, seedFile } from "./seed-timeline.ts"
import { type Served, startServe } from "./serve-process.ts"

interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: string
}

let dir = ""
let served: Served | undefined
let port = 0
let token = ""
/** Every body the server sent in this file's tests: none may hold the secret. */
const bodies: Array<string> = []

const ask = (
  path: string,
  options: { readonly method?: string; readonly headers?: Record<string, string> } = {}
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "GET",
        headers: { Host: `127.0.0.1:${port}`, ...options.headers }
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          bodies.push(body)
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
        })
      }
    )
    req.on("error", reject)
    req.end()
  })

const withToken = (path: string) => `${path}${path.includes("?") ? "&" : "?"}token=${token}`
const api = async (path: string) => {
  const answer = await ask(path, { headers: { Authorization: `Bearer ${token}` } })
  const json: unknown = JSON.parse(answer.body)
  return { ...answer, json }
}

/** A field of a JSON value (undefined when it is no object). */
const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwt-serve-"))
  const db = join(dir, "controller.db")
  await Effect.runPromise(seedFile(db))
  served = await startServe(db, dir)
  port = served.port
  token = served.token
})

afterAll(() => {
  served?.child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const SAFETY = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

describe("pi-workflow-turns serve (the built bin, over HTTP)", () => {
  it("prints one URL on 127.0.0.1 with a token of at least 128 bits", () => {
    expect(port).toBeGreaterThan(0)
    expect(token.length * 6).toBeGreaterThanOrEqual(128)
  })

  it("refuses every request without the right token (401), the page and its assets included", async () => {
    for (const path of [
      "/",
      "/app.js",
      "/app.css",
      "/api/runs",
      "/api/run?id=run-deploy",
      "/api/steps?id=run-deploy"
    ]) {
      expect((await ask(path)).status, path).toBe(401)
      expect((await ask(`${path}${path.includes("?") ? "&" : "?"}token=wrong`)).status, path).toBe(401)
    }
    expect((await ask("/api/runs", { headers: { Authorization: "Bearer nope" } })).status).toBe(401)
    expect((await ask("/api/runs", { headers: { Authorization: `Basic ${token}` } })).status).toBe(401)
  })

  it("refuses a foreign Host (403, DNS rebinding) and a foreign Origin (403), even with the token", async () => {
    const evilHost = await ask(withToken("/api/runs"), { headers: { Host: `attacker.example:${port}` } })
    expect(evilHost.status).toBe(403)
    expect(JSON.parse(evilHost.body)).toEqual({ error: "this server answers only to its own address" })
    expect((await ask(withToken("/"), { headers: { Host: "127.0.0.1" } })).status).toBe(403)
    const evilOrigin = await ask(withToken("/api/runs"), { headers: { Origin: "http://attacker.example" } })
    expect(evilOrigin.status).toBe(403)
    expect(
      (await ask(withToken("/api/runs"), { headers: { Origin: `http://127.0.0.1:${port}` } })).status
    ).toBe(200)
    expect(
      (
        await ask(withToken("/"), {
          headers: { Host: `localhost:${port}`, Origin: `http://localhost:${port}` }
        })
      ).status
    ).toBe(200)
  })

  it("serves only GET and HEAD (405 with Allow); HEAD has no body", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const answer = await ask(withToken("/api/runs"), { method })
      expect(answer.status, method).toBe(405)
      expect(answer.headers.allow).toBe("GET, HEAD")
    }
    const head = await ask(withToken("/api/runs"), { method: "HEAD" })
    expect(head.status).toBe(200)
    expect(head.body).toBe("")
  })

  it("every reply carries the safety headers and a strict CSP, refusals too", async () => {
    for (const answer of [await ask("/"), await ask(withToken("/")), await ask(withToken("/app.js"))]) {
      expect(answer.headers).toMatchObject(SAFETY)
      expect(answer.headers["content-security-policy"]).toContain("default-src 'none'")
      expect(answer.headers["content-security-policy"]).toContain("script-src 'self'")
      expect(answer.headers["content-security-policy"]).not.toContain("unsafe-inline")
    }
    expect((await ask(withToken("/"))).headers["content-type"]).toBe("text/html; charset=utf-8")
    expect((await ask(withToken("/app.js"))).headers["content-type"]).toBe("text/javascript; charset=utf-8")
    expect((await ask(withToken("/app.css"))).headers["content-type"]).toBe("text/css; charset=utf-8")
  })

  it("the API: the runs list, filters, one run with its chain, its timeline pages", async () => {
    const runs = await api("/api/runs")
    expect(runs.status).toBe(200)
    const ids = (json: unknown) => list(field(json, "runs")).map((run) => field(run, "id"))
    expect(ids(runs.json)).toEqual(["run-long", "run-ask", "run-deploy-2", "run-deploy"])
    expect(ids((await api("/api/runs?state=waiting")).json)).toEqual(["run-ask"])
    expect(ids((await api("/api/runs?workflow=deploy&limit=1")).json)).toEqual(["run-deploy-2"])
    const run = await api("/api/run?id=run-deploy")
    expect(field(run.json, "run")).toMatchObject({ id: "run-deploy", condition: "failed" })
    expect(field(run.json, "chain")).toEqual([
      { id: "run-deploy", relation: "this run (root)", note: null },
      { id: "run-deploy-2", relation: "restart 1", note: null }
    ])
    const steps = await api("/api/steps?id=run-long&limit=10&cursor=20")
    expect(field(steps.json, "next")).toBeNull()
    expect(list(field(steps.json, "items")).map((step) => field(step, "seq"))).toEqual([21, 22, 23, 24, 25])
    for (const kind of ["steps", "intents", "events"]) {
      for (const id of ["run-deploy", "run-ask", "run-long"])
        expect((await api(`/api/${kind}?id=${id}`)).status).toBe(200)
    }
  })

  it("bad input is a 400 with one short message; an unknown run or path a 404", async () => {
    const badLimit = await api("/api/steps?id=run-deploy&limit=100000")
    expect(badLimit.status).toBe(400)
    expect(badLimit.json).toEqual({ error: 'limit must be an integer from 1 to 500, got "100000"' })
    const long = await api(`/api/runs?workflow=${"w".repeat(3_000)}`)
    expect(long.status).toBe(400)
    expect(long.body.length).toBeLessThan(200)
    expect((await api("/api/runs?drop=table")).json).toEqual({ error: 'unknown parameter "drop"' })
    const huge = await api(`/api/runs?${"x".repeat(5_000)}=1`)
    expect([huge.status, huge.json]).toEqual([414, { error: "request target too long" }])
    expect((await api("/api/run?id=run-nope")).status).toBe(404)
    expect((await api("/api/nothing")).status).toBe(404)
  })

  it("the secret in a failed step's error, a run's error, an event and a question is in no response", async () => {
    for (const id of ["run-deploy", "run-ask"]) {
      for (const path of [
        `/api/run?id=${id}`,
        `/api/steps?id=${id}`,
        `/api/intents?id=${id}`,
        `/api/events?id=${id}`
      ]) {
        await api(path)
      }
    }
    await api("/api/runs")
    const all = bodies.join("\n")
    expect(all).toContain("GITHUB_TOKEN=[REDACTED]")
    expect(all).toContain("Ship it with [REDACTED]?")
    expect(all).not.toContain(SECRET)
    expect(all).not.toContain("A1b2C3d4E5")
  })

  it("SIGTERM closes the server and exits 0", async () => {
    expect(await served?.stop()).toBe(0)
    await expect(ask(withToken("/"))).rejects.toThrow(/ECONNREFUSED/)
  })
})
