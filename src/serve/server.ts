/**
 * The `serve` HTTP server: plain node:http on the CLI's Effect runtime (docs/cli.md says why not
 * @effect/platform's router: its bundle cost). `listen` binds 127.0.0.1 in a Scope (closed with
 * its connections when the scope ends) and runs the handler as an Effect per request; every reply
 * gets the same safety headers. A handler's defect is a 500, never a crash.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Cause, Data, Effect, Runtime, type Scope } from "effect"

export interface Request {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly header: (name: string) => string | undefined
}

export type BodyType = "html" | "js" | "css" | "json" | "text"

export interface Reply {
  readonly status: number
  readonly type: BodyType
  readonly body: string
  readonly headers?: Readonly<Record<string, string>>
}

export class ListenFailure extends Data.TaggedError("ListenFailure")<{ readonly message: string }> {}

const TYPES: Record<BodyType, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json; charset=utf-8",
  text: "text/plain; charset=utf-8"
}

/** Only this origin's own script and style; nothing inline, no frames, no forms, no base. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

export const SAFETY_HEADERS: Readonly<Record<string, string>> = {
  "Cache-Control": "no-store",
  "Content-Security-Policy": CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Resource-Policy": "same-origin"
}

/** The longest request target read; longer ones are refused before anything else. */
const MAX_TARGET = 4_096

const header = (req: IncomingMessage) => (name: string) => {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(", ") : value
}

const send = (res: ServerResponse, method: string, reply: Reply) => {
  const body = Buffer.from(reply.body, "utf8")
  res.writeHead(reply.status, {
    ...SAFETY_HEADERS,
    "Content-Type": TYPES[reply.type],
    "Content-Length": String(body.length),
    ...reply.headers
  })
  res.end(method === "HEAD" ? undefined : body)
}

const plain = (status: number, body: string): Reply => ({ status, type: "text", body })

/**
 * Listen on 127.0.0.1:`port` (0: a free one) until the scope closes; the port it got. Each
 * request runs `handle` (given the port, for the Host check) on the caller's runtime.
 */
export const listen = <R>(
  port: number,
  handle: (request: Request, port: number) => Effect.Effect<Reply, never, R>
) =>
  Effect.gen(function* () {
    const run = Runtime.runPromiseExit(yield* Effect.runtime<R>())
    let bound = 0
    const server = createServer((req, res) => {
      const method = req.method ?? "GET"
      const target = req.url ?? "/"
      if (target.length > MAX_TARGET) return send(res, method, plain(414, "request target too long"))
      // Parsed against a fixed base: an absolute-form target names its own host, which is ignored.
      const url = new URL(target, "http://127.0.0.1")
      const request: Request = { method, path: url.pathname, query: url.searchParams, header: header(req) }
      void run(handle(request, bound)).then((exit) => {
        if (res.headersSent) return
        send(res, method, exit._tag === "Success" ? exit.value : plain(500, "internal error"))
        if (exit._tag === "Failure" && !Cause.isInterruptedOnly(exit.cause)) {
          process.stderr.write("pi-workflow-turns serve: a request failed unexpectedly\n")
        }
      })
    })
    // A stalled client cannot hold a socket for long.
    server.headersTimeout = 10_000
    server.requestTimeout = 30_000
    bound = yield* Effect.acquireRelease(
      Effect.async<number, ListenFailure>((resume) => {
        server.once("error", (error: NodeJS.ErrnoException) =>
          resume(
            Effect.fail(
              new ListenFailure({
                message: `cannot listen on 127.0.0.1:${port}: ${error.code ?? error.message}`
              })
            )
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
  }) satisfies Effect.Effect<number, ListenFailure, R | Scope.Scope>
