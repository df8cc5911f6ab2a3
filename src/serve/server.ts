/**
 * The HTTP server: plain node:http on the CLI's Effect runtime (docs/cli.md, "serve", says why
 * not @effect/platform's). `listen` binds 127.0.0.1 in a Scope (closed with its connections at
 * the scope's end) and runs the handler as an Effect per request; every reply carries the same
 * safety headers, and a handler's defect is a 500, never a crash.
 */
import { createServer, type ServerResponse } from "node:http"
import { Data, Effect, Runtime, type Scope } from "effect"

export interface Request {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly header: (name: string) => string | undefined
}

export interface Reply {
  readonly status: number
  readonly type: "html" | "js" | "css" | "json" | "text"
  readonly body: string
  readonly headers?: Readonly<Record<string, string>>
}

export class ListenFailure extends Data.TaggedError("ListenFailure")<{ readonly message: string }> {}

const TYPES = {
  html: "text/html",
  js: "text/javascript",
  css: "text/css",
  json: "application/json",
  text: "text/plain"
}

/** The origin's own script and style only; nothing inline, framed, posted or based elsewhere. */
export const SAFETY_HEADERS: Readonly<Record<string, string>> = {
  "Cache-Control": "no-store",
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Resource-Policy": "same-origin"
}

const send = (res: ServerResponse, method: string, reply: Reply) => {
  const body = Buffer.from(reply.body)
  res.writeHead(reply.status, {
    ...SAFETY_HEADERS,
    "Content-Type": `${TYPES[reply.type]}; charset=utf-8`,
    "Content-Length": body.length,
    ...reply.headers
  })
  res.end(method === "HEAD" ? undefined : body)
}

const failed = (status: number, error: string): Reply => ({
  status,
  type: "json",
  body: JSON.stringify({ error })
})

/** Listen on 127.0.0.1:`port` (0: any free one) until the scope closes; the port it got. */
export const listen = <R>(
  port: number,
  handle: (request: Request, port: number) => Effect.Effect<Reply, never, R>
): Effect.Effect<number, ListenFailure, R | Scope.Scope> =>
  Effect.gen(function* () {
    const run = Runtime.runPromiseExit(yield* Effect.runtime<R>())
    let bound = port
    const server = createServer((req, res) => {
      const method = req.method ?? "GET"
      const target = req.url ?? "/"
      if (target.length > 4_096) return send(res, method, failed(414, "request target too long"))
      // Against a fixed base: an absolute-form target's own host is ignored (the Host header is checked).
      const url = new URL(target, "http://127.0.0.1")
      const header = (name: string) => {
        const value = req.headers[name]
        return Array.isArray(value) ? value.join(", ") : value
      }
      void run(handle({ method, path: url.pathname, query: url.searchParams, header }, bound)).then((exit) =>
        send(res, method, exit._tag === "Success" ? exit.value : failed(500, "internal error"))
      )
    })
    // A stalled client cannot hold a socket for long.
    server.headersTimeout = 10_000
    server.requestTimeout = 30_000
    bound = yield* Effect.acquireRelease(
      Effect.async<number, ListenFailure>((resume) => {
        server.once("error", (error: NodeJS.ErrnoException) =>
          resume(
            new ListenFailure({
              message: `cannot listen on 127.0.0.1:${port}: ${error.code ?? error.message}`
            })
          )
        )
        server.listen(port, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : port))
        })
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    return bound
  })
