/** Tab completion of `/workflow …`: subcommands, loaded workflows after `start`, run IDs after the run verbs. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { commandCompletions, runCommand } from "../../src/app/command.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { sampleRun } from "../support/fixtures.ts"
import { buildApp, greet } from "./support.ts"

const values = (prefix: string) =>
  Effect.map(commandCompletions(prefix), (items) => items.map((item) => item.value))

describe("/workflow completions", () => {
  it.live("subcommands, then workflow names, then this session's runs before other sessions'", () =>
    Effect.gen(function* () {
      expect(yield* values("")).toEqual([
        "status ",
        "start ",
        "cancel ",
        "pause ",
        "resume ",
        "answer ",
        "list "
      ])
      expect(yield* values("st")).toEqual(["status ", "start "])
      expect(yield* values("start ")).toEqual(["start greet ", "start release "])
      expect(yield* values("start re")).toEqual(["start release "])
      const mine = yield* runCommand({ _tag: "start", workflow: "greet", input: null })
      const runId = String(mine.details.runId)
      yield* (yield* RunStore).reserve(sampleRun("zz-other-run", { targetSessionId: "s-other" }))
      const items = yield* commandCompletions("cancel ")
      expect(items.map((item) => item.value)).toEqual([`cancel ${runId}`, "cancel zz-other-run"])
      expect(items[1]?.description).toContain("another session")
      expect(yield* values(`status ${runId.slice(0, 12)}`)).toEqual([`status ${runId}`])
      // Nothing after a complete run ID, nothing for an unknown verb.
      expect(yield* values(`status ${runId} x`)).toEqual([])
      expect(yield* values("bogus x")).toEqual([])
    }).pipe(Effect.provide(buildApp([greet, { ...greet, name: "release" }])), Effect.scoped)
  )
})
