/**
 * The moment a model request has left the process, seen through Node's own `fetch` against a
 * loopback server that holds its answer: the request is reported sent once the server has its
 * whole body and before any answer, once, and only for the armed provider's POST.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeWireWatch, originOf } from "../../src/extension/model-request.ts"

interface Held {
  readonly body: string
  readonly respond: () => void
}

let server: Server
let origin: string
const held: Array<Held> = []
const waiters: Array<() => void> = []

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (chunk: string) => {
      body += chunk
    })
    req.on("end", () => {
      held.push({ body, respond: () => res.end("{}") })
      for (const wake of waiters.splice(0)) wake()
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const h of held.splice(0)) h.respond()
  await new Promise<void>((done) => server.close(() => done()))
})

const arrived = (count: number) =>
  new Promise<void>((done) => {
    const check = () => (held.length >= count ? done() : waiters.push(check))
    check()
  })

/** Resolves after a few turns of the event loop: enough for a channel report that is coming. */
const settle = () => new Promise<void>((done) => setTimeout(done, 20))

describe("request on the wire", () => {
  it("reports a POST to the armed origin once it is sent, before the provider answers", async () => {
    const watch = makeWireWatch()
    const seen: Array<number> = []
    const big = "x".repeat(2_000_000) // more than a socket buffer takes at once
    watch.arm(origin, () => seen.push(held.length))
    const call = fetch(`${origin}/v1/chat/completions`, { method: "POST", body: big })
    await arrived(1)
    await settle()
    expect(seen).toHaveLength(1)
    expect(held[0]?.body.length).toBe(big.length)
    watch.responded() // the answer comes later: no second report
    for (const h of held.splice(0)) h.respond()
    await (await call).text()
    expect(seen).toHaveLength(1)
  })

  it("ignores a GET and a POST to another origin, and forgets a disarmed request", async () => {
    const watch = makeWireWatch()
    let fired = 0
    watch.arm("http://127.0.0.1:1", () => fired++)
    const other = fetch(`${origin}/elsewhere`, { method: "POST", body: "{}" })
    watch.arm(origin, () => fired++)
    watch.disarm()
    const after = fetch(`${origin}/v1/chat/completions`, { method: "POST", body: "{}" })
    await arrived(2)
    await settle()
    expect(fired).toBe(0)
    watch.arm(origin, () => fired++)
    const probe = fetch(`${origin}/v1/models`)
    await settle()
    for (const h of held.splice(0)) h.respond()
    await Promise.all([other, after, probe].map(async (p) => (await p).text()))
    expect(fired).toBe(0)
  })

  it("reports nothing once closed", async () => {
    const watch = makeWireWatch()
    let fired = 0
    watch.arm(origin, () => fired++)
    watch.close()
    const call = fetch(`${origin}/v1/chat/completions`, { method: "POST", body: "{}" })
    await arrived(1)
    await settle()
    watch.responded()
    for (const h of held.splice(0)) h.respond()
    await (await call).text()
    expect(fired).toBe(0)
  })

  it("counts a provider's answer as sent when no HTTP client reported it (a provider outside fetch)", () => {
    const watch = makeWireWatch()
    let fired = 0
    watch.arm(null, () => fired++)
    watch.responded()
    watch.responded()
    expect(fired).toBe(1)
  })

  it("names the origin of a provider base URL, or none", () => {
    expect(originOf("http://127.0.0.1:4000/v1")).toBe("http://127.0.0.1:4000")
    expect(originOf("not a url")).toBeNull()
    expect(originOf(undefined)).toBeNull()
  })
})
