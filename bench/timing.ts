/** Per-call timing loops: untimed warm-up, then one sample per call, median of rounds. */
import { Effect } from "effect"
import { nowUs } from "./fixtures.ts"
import { combineRounds, type Summary, summarize } from "./stats.ts"

export interface Loop {
  readonly ops: number
  readonly warmup: number
  readonly rounds: number
}

export const timeSync = (loop: Loop, call: (i: number) => unknown): Summary => {
  const rounds: Array<Summary> = []
  for (let r = 0; r < loop.rounds; r++) {
    for (let i = 0; i < loop.warmup; i++) call(i)
    const samples = new Float64Array(loop.ops)
    for (let i = 0; i < loop.ops; i++) {
      const start = nowUs()
      call(i)
      samples[i] = nowUs() - start
    }
    rounds.push(summarize(samples))
  }
  return combineRounds(rounds)
}

/** The same inside one fiber: what a caller already running in Effect pays per call. */
export const timeEffect = <E, R>(
  loop: Loop,
  call: (i: number) => Effect.Effect<unknown, E, R>
): Effect.Effect<Summary, E, R> =>
  Effect.gen(function* () {
    const rounds: Array<Summary> = []
    for (let r = 0; r < loop.rounds; r++) {
      for (let i = 0; i < loop.warmup; i++) yield* call(i)
      const samples = new Float64Array(loop.ops)
      for (let i = 0; i < loop.ops; i++) {
        const start = nowUs()
        yield* call(i)
        samples[i] = nowUs() - start
      }
      rounds.push(summarize(samples))
    }
    return combineRounds(rounds)
  })
