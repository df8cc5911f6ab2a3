/**
 * One competitor in the cross-process answer race (spawned by wait-race.test.ts, never run by
 * vitest). Opens the shared database, reports `ready`, waits for `go`, then answers every wait
 * in a seeded order through the engine's answer path (`recordAnswer`: the checks, then the
 * store's one conditional transaction); an `expires` worker times some waits out instead, as a
 * deadline watcher in another process would. Each outcome is one JSON line on stdout.
 */
import { Effect, Option, Random } from "effect"
import { recordAnswer } from "../../src/engine/checkpoint.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { reportLine, waitForGo } from "./kit.ts"
import { storesAt } from "./location.ts"
import { decodeWaitConfig, type WaitWorkerConfig, type WaitWorkerReport } from "./wait-protocol.ts"

const report = (line: WaitWorkerReport) => reportLine(line)

const compete = (config: WaitWorkerConfig) =>
  Effect.gen(function* () {
    const store = yield* RunStore
    yield* report({ type: "ready", worker: config.worker, pid: process.pid })
    yield* waitForGo
    const order = yield* Random.shuffle(config.waits)
    for (const [index, wait] of [...order].entries()) {
      const { requestId } = wait
      if (config.expires && index % 2 === 0) {
        const expired = yield* store.expireWait({ requestId, error: "timed out after 1m" })
        yield* Option.isSome(expired)
          ? report({ type: "won", worker: config.worker, requestId, how: "expire", answer: "" })
          : report({ type: "lost", worker: config.worker, requestId, reason: "not expired" })
        continue
      }
      const answer = `${config.worker}:${requestId}`
      yield* recordAnswer(store, { sessionId: wait.sessionId, requestId, answer, by: "agent" }).pipe(
        Effect.matchEffect({
          onSuccess: () => report({ type: "won", worker: config.worker, requestId, how: "answer", answer }),
          onFailure: (error) =>
            error._tag === "AnswerRejected"
              ? report({ type: "lost", worker: config.worker, requestId, reason: error.reason })
              : report({ type: "error", worker: config.worker, tag: error._tag, message: error.message })
        })
      )
    }
    yield* report({ type: "done", worker: config.worker })
  })

const config = decodeWaitConfig(process.argv[2] ?? "")
await Effect.runPromise(
  compete(config).pipe(
    Effect.provide(storesAt(config.location)),
    Effect.withRandom(Random.make(config.seed)),
    Effect.scoped
  )
)
