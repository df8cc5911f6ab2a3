/**
 * `pi-workflow-turns serve`: the runs and one run's timeline as a local web page, read-only
 * like every command (`withStores`). It binds 127.0.0.1 only, prints one line with the page's
 * URL and its random access token, and serves until SIGINT or SIGTERM, then closes the server
 * and the database and exits 0. The safety rules are in src/serve/guard.ts; docs/cli.md, "serve".
 */
import { Deferred, Effect, type Option } from "effect"
import { newToken } from "../serve/guard.ts"
import { handler } from "../serve/routes.ts"
import { listen } from "../serve/server.ts"
import { CliFailure } from "./format.ts"
import { withStores } from "./open.ts"

/** Resolved by the first SIGINT or SIGTERM while the scope is open (later ones are ignored until it closes). */
const stopSignal = Effect.gen(function* () {
  const stop = yield* Deferred.make<void>()
  const on = () => Deferred.unsafeDone(stop, Effect.void)
  yield* Effect.acquireRelease(
    Effect.sync(() => {
      process.on("SIGINT", on)
      process.on("SIGTERM", on)
    }),
    () =>
      Effect.sync(() => {
        process.off("SIGINT", on)
        process.off("SIGTERM", on)
      })
  )
  return Deferred.await(stop)
})

export const serve = Effect.fn("Cli.serve")(function* (db: Option.Option<string>, port: number) {
  if (!Number.isSafeInteger(port) || port < 0 || port > 65_535) {
    return yield* new CliFailure({ message: `--port must be from 0 to 65535, got ${port}`, exitCode: 2 })
  }
  yield* withStores(db, () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stopped = yield* stopSignal
        const token = newToken()
        const bound = yield* listen(port, handler(token)).pipe(
          Effect.mapError((failure) => new CliFailure({ message: failure.message, exitCode: 2 }))
        )
        // Written past `shown` on purpose: the redactor would hide the token (`token=…`), and this
        // line is the one place it is given out. It holds nothing from the database.
        yield* Effect.sync(() => process.stdout.write(`http://127.0.0.1:${bound}/?token=${token}\n`))
        yield* stopped
      })
    )
  )
})
