/**
 * A loopback proxy in front of the test cluster's unix socket, for network faults one test can
 * cause without touching the server other test files share: `refuse` stops listening and cuts
 * every open connection (what clients see when the server is gone: the socket file is missing),
 * `slow` delays every chunk both ways, `stall` holds every chunk (connections stay open, nothing
 * arrives: a frozen server or a partitioned network), `heal` ends all three (held chunks are then
 * passed on in order). Everything passes through unchanged otherwise; the proxy closes with its
 * scope.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createConnection, createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, type Scope } from "effect"

export interface PgProxy {
  /** `url` with its unix-socket host replaced by the proxy's directory. */
  readonly url: string
  readonly refuse: Effect.Effect<void>
  readonly slow: (ms: number) => Effect.Effect<void>
  readonly stall: Effect.Effect<void>
  readonly heal: Effect.Effect<void>
}

/** PostgreSQL's socket file name in a socket directory (the default port). */
const socketIn = (dir: string, port: string) => join(dir, `.s.PGSQL.${port}`)

const listen = (server: Server, path: string) =>
  Effect.async<void>((resume) => {
    server.listen(path, () => resume(Effect.void))
  })

/** Start a proxy for `url` (a URL whose `host` parameter is the server's socket directory). */
export const startPgProxy = (url: string): Effect.Effect<PgProxy, never, Scope.Scope> =>
  Effect.gen(function* () {
    const target = new URL(url)
    const upstreamDir = target.searchParams.get("host") ?? "/var/run/postgresql"
    const port = target.port === "" ? "5432" : target.port
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "pwt-proxy-"))),
      (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
    )
    const path = socketIn(dir, port)
    const open = new Set<Socket>()
    let delayMs = 0
    let held: Array<readonly [Socket, Buffer]> | null = null
    const forward = (from: Socket, to: Socket) => {
      from.on("data", (chunk: Buffer) => {
        // Equal delays fire in arrival order, so the stream stays in order.
        if (held !== null) held.push([to, chunk])
        else if (delayMs === 0) to.write(chunk)
        else setTimeout(() => to.write(chunk), delayMs)
      })
      from.on("close", () => to.destroy())
      from.on("error", () => to.destroy())
    }
    const server = createServer((client) => {
      const upstream = createConnection(socketIn(upstreamDir, port))
      open.add(client)
      open.add(upstream)
      client.on("close", () => open.delete(client))
      upstream.on("close", () => open.delete(upstream))
      forward(client, upstream)
      forward(upstream, client)
    })
    const cut = Effect.sync(() => {
      for (const socket of open) socket.destroy()
      open.clear()
    })
    const stop = Effect.async<void>((resume) => {
      if (!server.listening) return resume(Effect.void)
      server.close(() => resume(Effect.void))
      for (const socket of open) socket.destroy()
    })
    yield* Effect.acquireRelease(listen(server, path), () => Effect.zipRight(cut, stop))
    const proxied = new URL(url)
    proxied.searchParams.set("host", dir)
    return {
      url: proxied.toString(),
      refuse: Effect.zipRight(cut, stop),
      slow: (ms) =>
        Effect.sync(() => {
          delayMs = ms
        }),
      stall: Effect.sync(() => {
        held ??= []
      }),
      heal: Effect.zipRight(
        Effect.sync(() => {
          delayMs = 0
          const release = held ?? []
          held = null
          for (const [to, chunk] of release) if (!to.destroyed) to.write(chunk)
        }),
        Effect.suspend(() => (server.listening ? Effect.void : listen(server, path)))
      )
    }
  })
