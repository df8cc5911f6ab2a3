/**
 * What the CLI tests on both backends share: running the built bin in a child process (no
 * inherited environment beyond PATH, HOME in the test's temp dir), the one-line error shape, and
 * the rows they seed.
 */
import { execFile } from "node:child_process"
import { expect } from "vitest"
import { Effect } from "effect"
import type { NewRun } from "../../src/store/run-store.ts"
import type { TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"

export interface Result {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Run `script` (the bin's JavaScript) with `args` in `dir`; never rejects, the exit code is in the result. */
export const runCli = (
  script: string,
  dir: string,
  args: ReadonlyArray<string>,
  env: Record<string, string> = {}
): Promise<Result> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [script, ...args],
      { cwd: dir, env: { PATH: process.env.PATH ?? "", HOME: dir, ...env } },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr })
    )
  })

/** One line on stderr, no stack trace. */
export const expectOneLine = (result: Result) => {
  const lines = result.stderr.trimEnd().split("\n")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(/^pi-workflow-turns: /)
  expect(result.stderr).not.toMatch(/\n\s+at /)
}

export const newRun = (runId: string, sessionId: string): NewRun => ({
  runId,
  workflowName: "greet",
  workflowRef: "greet",
  revision: 1,
  sourceFingerprint: "sha256:abc",
  snapshot: { schema: "x" },
  targetSessionId: sessionId,
  origin: "tool",
  input: { topic: "hello" },
  startAt: "hello",
  maxSteps: 10
})

/** An intent's whole life: stored, made eligible, claimed by a pass, resolved by its fallback message. */
export const resolvedIntent = (
  intents: TurnIntentStoreService,
  input: Parameters<TurnIntentStoreService["ensure"]>[0]
) =>
  Effect.gen(function* () {
    const intent = yield* intents.ensure(input)
    yield* intents.makeEligible({ intentId: intent.intentId })
    yield* intents.claimEligibleForSession({
      targetSessionId: input.targetSessionId,
      limit: 1,
      token: "d1",
      leaseMs: 60_000
    })
    yield* intents.resolve({
      intentId: intent.intentId,
      token: "d1",
      resolution: "fallback",
      messageId: "m-1"
    })
    return intent.intentId
  })
