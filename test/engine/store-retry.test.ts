/**
 * The engine's store wrappers apply to every method the store has, by name: a method added to
 * the contract is typed and retried without an edit in `store-retry.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Ref } from "effect"
import { aroundEach } from "../../src/engine/store-retry.ts"
import { StoreFailure } from "../../src/store/store-errors.ts"

describe("aroundEach", () => {
  it.effect("wraps every method, named by its key, with its arguments and `this` kept", () =>
    Effect.gen(function* () {
      const seen = yield* Ref.make<ReadonlyArray<string>>([])
      const store = {
        add(n: number): Effect.Effect<number, StoreFailure> {
          return Effect.map(this.someNewMethod("x"), (text) => text.length + n)
        },
        someNewMethod: (text: string): Effect.Effect<string, StoreFailure> =>
          Effect.succeed(text.toUpperCase()),
        broken: (): Effect.Effect<never, StoreFailure> => Effect.die(new Error("driver threw"))
      }
      const wrapped = aroundEach(store, (operation, effect) =>
        Effect.zipRight(
          Ref.update(seen, (names) => [...names, operation]),
          Effect.catchAllDefect(effect, (defect) =>
            Effect.fail(new StoreFailure({ operation, message: String(defect) }))
          )
        )
      )
      expect(yield* wrapped.add(5)).toBe(6)
      expect(yield* wrapped.someNewMethod("x")).toBe("X")
      const failed = yield* Effect.either(wrapped.broken())
      expect(Either.isLeft(failed) && [failed.left._tag, failed.left.operation]).toEqual([
        "StoreFailure",
        "broken"
      ])
      expect(yield* Ref.get(seen)).toEqual(["add", "someNewMethod", "broken"])
    })
  )
})
