/**
 * One competitor in the mixed cross-process race (spawned by mixed-race.test.ts, never run by
 * vitest). On one database (a SQLite file or a PostgreSQL URL), with both stores as the app opens them, it alternates between:
 *
 * - runs: claim (activate or resume) with a short lease, write steps under the claim, sometimes
 *   renew, sometimes sleep past the lease (and lose the run), then end the run once it has
 *   enough steps, park it, or abandon the claim to expire;
 * - turn intents: claim (both ways), then resolve, release, abandon or hold past the lease.
 *
 * Every accepted run write, run end and intent resolution is one JSON line on stdout; so is any
 * store failure (SQLITE_BUSY or an exhausted serialization retry would be one). Uses the real clock, so leases really expire.
 */
import { Effect, Option, Random } from "effect"
import type { TurnIntent } from "../../src/domain/turn-intent.ts"
import { isTerminal, RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { decodeConfig, type WorkerConfig, type WorkerReport } from "./mixed-protocol.ts"
import { pick, reportLine, waitForGo } from "./kit.ts"
import { storesAt } from "./location.ts"

const report = (line: WorkerReport) => reportLine(line)

const compete = (config: WorkerConfig) =>
  Effect.gen(function* () {
    const runs = yield* RunStore
    const intents = yield* TurnIntentStore
    const stats: Record<string, number> = {}
    const count = (key: string, by = 1) => {
      stats[key] = (stats[key] ?? 0) + by
    }
    /** Expected outcomes become `fallback`; a store failure is reported (the parent asserts none). */
    const guarded = <A, E extends { readonly _tag: string; readonly message: string }>(
      effect: Effect.Effect<A, E>,
      expected: ReadonlyArray<string>,
      fallback: A
    ) =>
      effect.pipe(
        Effect.tap(() => count("ops")),
        Effect.catchAll((error) =>
          expected.includes(error._tag)
            ? Effect.as(
                Effect.sync(() => count(error._tag)),
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

    let sequence = 0

    const playRun = Effect.gen(function* () {
      const runId = yield* pick(config.runIds)
      const found = yield* guarded(runs.get(runId), [], Option.none())
      if (Option.isNone(found) || isTerminal(found.value.state)) return
      const token = `${config.worker}:r${++sequence}`
      const leaseMs = yield* Random.nextIntBetween(20, 120)
      const mode = found.value.state === "queued" ? "activate" : "resume"
      const claimed = yield* guarded(
        Effect.as(runs.claim({ runId, token, leaseMs, mode }), true),
        ["ClaimRefused", "RunNotFound"],
        false
      )
      if (!claimed) return
      count("runClaims")
      const fence = { runId, token }
      const steps = yield* Random.nextIntBetween(1, 4)
      for (let k = 0; k < steps; k++) {
        if ((yield* Random.nextIntBetween(0, 100)) < 25) {
          count("sleptPastLease")
          yield* Effect.sleep(leaseMs + 40)
        }
        const attemptId = `${token}:${k}`
        const wrote = yield* guarded(
          Effect.as(runs.startStep(fence, { nodeId: "work", attemptId }), true),
          ["ClaimLost"],
          false
        )
        if (!wrote) return
        yield* report({ type: "wrote", worker: config.worker, runId, attemptId })
        if ((yield* Random.nextIntBetween(0, 100)) < 30) {
          const renewed = yield* guarded(Effect.as(runs.renew(fence, leaseMs), true), ["ClaimLost"], false)
          if (!renewed) return
        }
      }
      const total = (yield* guarded(runs.steps(runId), [], [])).length
      const roll = yield* Random.nextIntBetween(0, 100)
      if (total >= config.stepsToFinish) {
        const ended = yield* guarded(
          Effect.as(
            runs.settle(fence, { next: { _tag: "End", state: "completed", result: { steps: total } } }),
            true
          ),
          ["ClaimLost"],
          false
        )
        if (ended) yield* report({ type: "ended", worker: config.worker, runId, token })
      } else if (roll < 50) {
        yield* guarded(runs.settle(fence, { next: { _tag: "Park", reason: "race" } }), ["ClaimLost"], null)
        count("parked")
      } else count("abandonedRuns")
    })

    const playIntent = Effect.gen(function* () {
      const token = `${config.worker}:i${++sequence}`
      const leaseMs = yield* Random.nextIntBetween(20, 150)
      let claimed: ReadonlyArray<TurnIntent>
      if (yield* Random.nextBoolean) {
        const run = yield* pick(config.intentRuns)
        claimed = Option.toArray(
          yield* guarded(intents.claimForRun({ ...run, token, leaseMs }), [], Option.none())
        )
      } else {
        const targetSessionId = yield* pick(config.sessions)
        const limit = yield* Random.nextIntBetween(1, 5)
        claimed = yield* guarded(
          intents.claimEligibleForSession({ targetSessionId, token, leaseMs, limit }),
          [],
          []
        )
      }
      count("intentsClaimed", claimed.length)
      for (const intent of claimed) {
        const roll = yield* Random.nextIntBetween(0, 100)
        if (roll < 8) {
          yield* guarded(intents.release({ intentId: intent.intentId, token }), [], false)
          continue
        }
        if (roll < 16) {
          count("abandonedIntents")
          continue
        }
        if (roll < 22) {
          count("heldPastLease")
          yield* Effect.sleep(leaseMs + 5)
        }
        const messageId = `turn-message:${token}:${intent.intentId.slice(-12)}`
        const resolved = yield* guarded(
          Effect.as(
            intents.resolve({ intentId: intent.intentId, token, resolution: "fallback", messageId }),
            true
          ),
          ["ClaimNotHeld"],
          false
        )
        if (resolved)
          yield* report({ type: "resolved", worker: config.worker, intentId: intent.intentId, messageId })
      }
    })

    const finished = Effect.gen(function* () {
      const pending = yield* guarded(
        Effect.map(intents.list({ state: "pending", limit: 1 }), (rows) => rows.length),
        [],
        1
      )
      if (pending > 0) return false
      for (const runId of config.runIds) {
        const run = yield* guarded(runs.get(runId), [], Option.none())
        if (Option.isNone(run) || !isTerminal(run.value.state)) return false
      }
      return true
    })

    yield* report({ type: "ready", worker: config.worker })
    yield* waitForGo
    const deadline = Date.now() + config.durationMs
    let rounds = 0
    while (Date.now() < deadline) {
      if (yield* Random.nextBoolean) yield* playRun
      else yield* playIntent
      if (++rounds % 20 === 0 && (yield* finished)) break
      yield* Effect.sleep(yield* Random.nextIntBetween(0, 3))
    }
    yield* report({ type: "done", worker: config.worker, stats })
  })

const config = decodeConfig(process.argv[2] ?? "")
const program = compete(config).pipe(
  Effect.withRandom(Random.make(config.seed)),
  // Both stores on one connection, as src/app/layers.ts opens them (without the engine).
  Effect.provide(storesAt(config.location)),
  Effect.orDie
)
Effect.runPromise(program).catch((error: unknown) => {
  process.stderr.write(`race worker ${config.worker} failed: ${String(error)}\n`)
  process.exitCode = 1
})
