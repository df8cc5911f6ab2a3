/**
 * One competitor in the cross-process race (spawned by intent-race.test.ts, never run by vitest).
 *
 * Opens the shared database (a SQLite file or a PostgreSQL URL), reports `ready`, waits for `go` on stdin, then claims intents with
 * both claim operations until none is pending or its time is up. A claim is resolved, released,
 * abandoned (its short lease left to expire) or held past its lease before resolving. Every
 * granted claim, early release and successful resolve is reported as one JSON line on stdout;
 * store failures are reported too.
 * Uses the real clock, so leases really expire.
 */
import { Effect, Layer, Option, Random } from "effect"
import type { TurnIntent } from "../../src/domain/turn-intent.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { decodeConfig, type WorkerConfig, type WorkerReport } from "./intent-protocol.ts"
import { pick, reportLine, waitForGo } from "./kit.ts"
import { storesAt } from "./location.ts"

const report = (line: WorkerReport) => reportLine(line)

const compete = (config: WorkerConfig) =>
  Effect.gen(function* () {
    const store = yield* TurnIntentStore
    const stats: Record<string, number> = {
      ops: 0,
      claimCalls: 0,
      claimed: 0,
      resolved: 0,
      released: 0,
      abandoned: 0,
      heldPastLease: 0,
      notHeld: 0,
      storeFailures: 0
    }
    const count = (key: string, by = 1) => {
      stats[key] = (stats[key] ?? 0) + by
    }
    // Report a store failure (SQLITE_BUSY would land here) and carry on: the parent asserts none.
    const guarded = <A, E extends { readonly _tag: string; readonly message: string }>(
      effect: Effect.Effect<A, E>,
      fallback: A
    ) =>
      effect.pipe(
        Effect.tap(() => count("ops")),
        Effect.catchAll((error) =>
          error._tag === "ClaimNotHeld"
            ? Effect.as(
                Effect.sync(() => count("notHeld")),
                fallback
              )
            : Effect.as(
                Effect.zipRight(
                  Effect.sync(() => count("storeFailures")),
                  report({ type: "error", worker: config.worker, tag: error._tag, message: error.message })
                ),
                fallback
              )
        )
      )

    yield* report({ type: "ready", worker: config.worker, pid: process.pid })
    yield* waitForGo
    const deadline = Date.now() + config.durationMs
    let sequence = 0
    while (Date.now() < deadline) {
      const token = `${config.worker}:${++sequence}`
      const leaseMs = yield* Random.nextIntBetween(20, 150)
      count("claimCalls")
      let claimed: ReadonlyArray<TurnIntent>
      if (yield* Random.nextBoolean) {
        const run = yield* pick(config.runs)
        const one = yield* guarded(store.claimForRun({ ...run, token, leaseMs }), Option.none())
        claimed = Option.toArray(one)
      } else {
        const targetSessionId = yield* pick(config.sessions)
        const limit = yield* Random.nextIntBetween(1, 5)
        claimed = yield* guarded(
          store.claimEligibleForSession({ targetSessionId, token, leaseMs, limit }),
          []
        )
      }
      count("claimed", claimed.length)
      for (const intent of claimed) {
        yield* report({
          type: "claimed",
          worker: config.worker,
          intentId: intent.intentId,
          token,
          leaseMs,
          expiresAt: intent.deliveryClaimExpiresAt ?? 0
        })
      }
      if (claimed.length === 0) {
        const pending = yield* guarded(
          Effect.map(store.list({ state: "pending", limit: 1 }), (found) => found.length),
          1
        )
        if (pending === 0) break
        yield* Effect.sleep(yield* Random.nextIntBetween(1, 8))
        continue
      }
      for (const intent of claimed) {
        const roll = yield* Random.nextIntBetween(0, 100)
        if (roll < 8) {
          const released = yield* guarded(store.release({ intentId: intent.intentId, token }), false)
          if (released) {
            count("released")
            yield* report({ type: "released", worker: config.worker, intentId: intent.intentId, token })
          }
          continue
        }
        if (roll < 16) {
          count("abandoned")
          continue
        }
        if (roll < 22) {
          // Hold the claim past its lease: the resolve below must now lose.
          count("heldPastLease")
          yield* Effect.sleep(leaseMs + 5)
        }
        const messageId = `turn-message:${token}:${intent.intentId.slice(-12)}`
        const resolved = yield* guarded(
          Effect.as(
            store.resolve({ intentId: intent.intentId, token, resolution: "fallback", messageId }),
            true
          ),
          false
        )
        if (resolved) {
          count("resolved")
          yield* report({ type: "resolved", worker: config.worker, intentId: intent.intentId, messageId })
        }
      }
    }
    yield* report({ type: "done", worker: config.worker, stats })
  })

const config = decodeConfig(process.argv[2] ?? "")
const program = compete(config).pipe(
  Effect.withRandom(Random.make(config.seed)),
  Effect.provide(Layer.orDie(storesAt(config.location)))
)
Effect.runPromise(program).catch((error: unknown) => {
  process.stderr.write(`race worker ${config.worker} failed: ${String(error)}\n`)
  process.exitCode = 1
})
