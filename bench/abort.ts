/**
 * The interruption path: from the agent's `workflow cancel` to the aborted turn, and from its
 * settle to the fallback message. Section "abort": in the whole app over the fake Pi session and
 * the real store (`runTool cancel` → `PiSession.abort`), with the store free and while a second
 * process holds the write lock; at the abort a separate read-only connection, which sees only
 * committed rows, must already see the intent. Section "pi-delivery": in real Pi (RPC mode, the
 * built extension, the scripted mock model) a self-cancelling workflow again and again, from
 * `agent_settled {aborted: true}` to the fallback message being appended.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import Sqlite from "better-sqlite3"
import { Effect, Exit, Fiber, Layer, Logger, LogLevel, Scope } from "effect"
import * as App from "../src/app/layers.ts"
import { afterSettle, classifySettle } from "../src/app/session-hooks.ts"
import { runTool } from "../src/app/tool.ts"
import { DEFAULT_TIMING_POLICY, TimingPolicy, toMillis } from "../src/domain/timing-policy.ts"
import { layerFake, PiSessionFake } from "../src/session/pi-session-fake.ts"
import { holdWriteLockInProcess } from "../src/testing/store-faults.ts"
import { type ChatRequest, contentText, startMockOpenAI } from "../test/e2e/harness/mock-openai.ts"
import { startPi } from "../test/e2e/harness/pi-rpc.ts"
import { createPiSandbox } from "../test/e2e/harness/pi-sandbox.ts"
import { isCustomMessageEnd } from "../test/e2e/harness/rpc-records.ts"
import { customMessages } from "../test/e2e/harness/session-file.ts"
import {
  type BenchSection,
  builtExtension,
  type Check,
  checkList,
  mark,
  summarize,
  table,
  us
} from "./section.ts"
import { nowUs } from "./sql.ts"

/** Goals of issue 25: tool call → abort (p99), and the fallback after the aborted turn settles (p99). */
const ABORT_GOAL_US = 5_000
const FALLBACK_GOAL_MS = 20
const PERSIST_TIMEOUT_MS = toMillis(DEFAULT_TIMING_POLICY.abortPersistTimeout)

const STEP = "pi-workflows-agent-step"
const FALLBACK = "pi-workflows-deferred-turn"
const STEP_PROMPT = "BENCH STEP: cancel this workflow now."
const START_PROMPT = "bench: start cancel-me"

const cancelMe = {
  name: "cancel-me",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: STEP_PROMPT, timeoutMs: null } },
  edges: []
}

/** Poll (real clock) until `check` holds; the engine's runner works in its own fibers. */
const until = <A, E, R>(effect: Effect.Effect<A, E, R>, check: (a: A) => boolean, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 5_000; i++) {
      if (check(yield* effect)) return
      yield* Effect.sleep("1 millis")
    }
    return yield* Effect.dieMessage(`abort bench: timed out waiting for ${what}`)
  })

/**
 * `runTool cancel` → abort, `runs` times, each in a new run whose step turn is open. With
 * `foreignLock` a second process takes the write lock after the step was sent and releases it
 * after the abort; the run must still get its one fallback afterwards.
 */
const toolCallToAbort = (filename: string, runs: number, foreignLock: boolean) =>
  Effect.gen(function* () {
    const fake = yield* PiSessionFake
    // A read-only second connection: it sees an intent only once it is committed.
    const probe = new Sqlite(filename, { readonly: true, fileMustExist: true })
    yield* Effect.addFinalizer(() => Effect.sync(() => probe.close()))
    const stored = probe.prepare(
      "SELECT count(*) FROM workflow_turn_intents WHERE run_id = ? AND cause = 'agentCancelled'"
    )
    let runId = ""
    let abortedAt = 0
    let durable = false
    yield* fake.onAbort(
      Effect.sync(() => {
        abortedAt = nowUs()
        if (!foreignLock) durable = Number(stored.pluck().get(runId)) === 1
      })
    )
    const sent = (type: string) =>
      Effect.map(fake.sent, (s) => s.filter((r) => r.message.customType === type).length)
    const samples: Array<number> = []
    let notDurable = 0
    let unfinished = 0
    for (let i = 0; i < runs; i++) {
      // Pi gives every tool call an ID; a start from a run's terminal turn needs it.
      const started = yield* runTool(
        { _tag: "start", workflow: "cancel-me" },
        { toolCallId: `bench-start-${i}` }
      )
      if (typeof started.details.runId !== "string") return yield* Effect.dieMessage(started.text)
      runId = started.details.runId
      // The queued run starts after the turn that started it settles; its step opens a turn.
      yield* afterSettle(false)
      yield* until(sent(STEP), (n) => n === i + 1, "the step message")
      abortedAt = 0
      if (foreignLock) {
        const lock = yield* Scope.make()
        yield* holdWriteLockInProcess(filename).pipe(Scope.extend(lock))
        const start = nowUs()
        const cancel = yield* Effect.fork(runTool({ _tag: "cancel" }))
        yield* until(
          Effect.sync(() => abortedAt),
          (at) => at !== 0,
          "the abort under the lock"
        )
        samples.push(abortedAt - start)
        yield* Scope.close(lock, Exit.void)
        yield* Fiber.join(cancel)
      } else {
        const start = nowUs()
        const reply = yield* runTool({ _tag: "cancel" })
        if (abortedAt === 0) return yield* Effect.dieMessage(`cancel did not abort: ${reply.text}`)
        samples.push(abortedAt - start)
        if (!durable) notDurable++
      }
      // Pi's agent_settled for the aborted turn, then the fallback turn and its settle.
      const held = yield* classifySettle(true)
      yield* fake.settle({ aborted: true })
      yield* afterSettle(held.userHold)
      const delivered = yield* Effect.either(
        until(sent(FALLBACK), (n) => n === i + 1 - unfinished, "the fallback")
      )
      if (delivered._tag === "Left") unfinished++
      yield* fake.settle()
      yield* afterSettle(false)
    }
    return { toAbort: summarize(samples), notDurable, unfinished }
  })

const inApp = (filename: string, runs: number, foreignLock: boolean) =>
  // The core logs a warning for every abort-time persist that fails under the lock, on purpose.
  Effect.runPromise(
    Logger.withMinimumLogLevel(
      Effect.scoped(toolCallToAbort(filename, runs, foreignLock)).pipe(
        Effect.provide(
          App.layer({ database: { filename }, workflows: [cancelMe] }).pipe(
            // No periodic fallback pass; under the foreign lock no reconciliation pass either.
            Layer.provide(
              Layer.succeed(TimingPolicy, {
                ...DEFAULT_TIMING_POLICY,
                syncInterval: null,
                ...(foreignLock ? { maintenanceInterval: null } : {})
              })
            ),
            Layer.provideMerge(layerFake({ sessionId: "s1" })),
            Layer.orDie
          )
        )
      ),
      LogLevel.None
    )
  )

export const abortSection: BenchSection = {
  id: "abort",
  title: "Abort path: cancel → abort with the intent stored",
  run: async (context) => {
    const toolRuns = context.quick ? 20 : 200
    const foreignRuns = context.quick ? 3 : 30
    context.log("  abort: tool call → abort (app layer)")
    const tool = await inApp(join(context.tempRoot, "abort-tool.db"), toolRuns, false)
    context.log("  abort: tool call → abort, write lock held by a second process")
    const foreign = await inApp(join(context.tempRoot, "abort-foreign.db"), foreignRuns, true)
    const ms = (value: number) => `${(value / 1000).toFixed(value >= 100_000 ? 0 : 1)} ms`
    const checks: Array<Check> = [
      {
        name: "abort path: the intent is committed before every abort, and every run gets its fallback",
        ok: tool.notDurable === 0 && tool.unfinished === 0,
        detail: `${tool.notDurable} of ${toolRuns} tool calls not durable at abort, ${tool.unfinished} without a fallback`
      }
    ]
    const goals: Array<Check> = [
      {
        name: `abort path: \`workflow cancel\` tool call → abort within ${ABORT_GOAL_US / 1000} ms (p99)`,
        ok: tool.toAbort.p99 <= ABORT_GOAL_US,
        detail: `p50 ${us(tool.toAbort.median)} µs, p99 ${us(tool.toAbort.p99)} µs over ${toolRuns} tool calls`
      },
      {
        name: `abort path: a write lock held by another process delays the abort by at most ${PERSIST_TIMEOUT_MS} ms (p99)`,
        ok: foreign.toAbort.p99 <= PERSIST_TIMEOUT_MS * 1000,
        detail: `p50 ${ms(foreign.toAbort.median)}, p99 ${ms(foreign.toAbort.p99)} over ${foreignRuns} tool calls; ${foreign.unfinished} runs without their fallback afterwards`
      }
    ]
    const markdown = [
      "Time from the `workflow cancel` tool call until `PiSession.abort` runs, in the app layer (engine cancel, " +
        "event policy, ensure, bookkeeping) over the fake Pi session and the real store (`synchronous=NORMAL`), " +
        "one workflow run per sample, µs (median / p99). At that moment a separate read-only connection must " +
        "already see the intent: it is committed.",
      "",
      table(
        ["path", "samples", "to abort", "after the abort"],
        [
          [
            "`workflow cancel` tool call → abort",
            String(toolRuns),
            `${us(tool.toAbort.median)} / ${us(tool.toAbort.p99)}`,
            `intent committed at abort ${mark(tool.notDurable === 0)}`
          ],
          [
            "the same while a **second process** holds the write lock (busy budget 5,000 ms)",
            String(foreignRuns),
            `${ms(foreign.toAbort.median)} / ${ms(foreign.toAbort.p99)}`,
            `${foreignRuns - foreign.unfinished} of ${foreignRuns} runs got their one fallback after the lock went away`
          ]
        ]
      ),
      "",
      `The abort's persist is bounded by TimingPolicy.abortPersistTimeout (${PERSIST_TIMEOUT_MS} ms): the connection's own ` +
        "busy_timeout is 0 and lock waits are retried asynchronously (src/store/database.ts), so the event loop " +
        "never blocks on the lock, and the run reaches its durable end (with the intent made eligible) once the " +
        "lock is released. Millisecond tails come from WAL checkpoints (which fsync even with " +
        "`synchronous=NORMAL`) and from timer scheduling on this shared machine.",
      "",
      checkList([...goals, ...checks])
    ].join("\n")
    return { markdown, checks, goals }
  }
}

/** The model: start on the user's prompt, cancel inside the step's turn, acknowledge anything else. */
const route = (request: ChatRequest) => {
  const last = request.messages.at(-1)
  const text = contentText(last?.content)
  if (last?.role === "user" && text.includes(START_PROMPT))
    return { toolCalls: [{ name: "workflow", arguments: { action: "start", workflow: "cancel-me" } }] }
  if (last?.role === "user" && text.includes(STEP_PROMPT))
    return { toolCalls: [{ name: "workflow", arguments: { action: "cancel" } }] }
  return { text: "Noted." }
}

/** A Pi RPC record's arrival, timestamped by the bench as it reads the child's stdout. */
interface Arrival {
  readonly at: number
  readonly record: Readonly<Record<string, unknown>>
}

/**
 * Timestamp every JSON line of a child's stdout (the harness keeps records but not times). Both
 * events of a latency pair travel the same pipe, so their difference is Pi's, not the pipe's.
 */
const timestampLines = (stdout: NodeJS.ReadableStream): ReadonlyArray<Arrival> => {
  const arrivals: Array<Arrival> = []
  let buffer = ""
  stdout.on("data", (chunk: string | Buffer) => {
    const at = performance.now()
    buffer += chunk.toString()
    for (let newline = buffer.indexOf("\n"); newline >= 0; newline = buffer.indexOf("\n")) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      try {
        const parsed: unknown = JSON.parse(line)
        if (typeof parsed === "object" && parsed !== null) arrivals.push({ at, record: { ...parsed } })
      } catch {
        // Not an RPC record; the harness reports those.
      }
    }
  })
  return arrivals
}

const isFallbackEnd = (record: Readonly<Record<string, unknown>>) => isCustomMessageEnd(record, FALLBACK)

const isCancel = (record: Readonly<Record<string, unknown>>): boolean => {
  const args = record.args
  return typeof args === "object" && args !== null && "action" in args && args.action === "cancel"
}

export const piDeliverySection: BenchSection = {
  id: "pi-delivery",
  title: "Fallback delivery in real Pi: agent_settled → fallback appended",
  run: async (context) => {
    const runs = context.quick ? 3 : 25
    const extension = builtExtension(context.log)
    const mock = await startMockOpenAI({ script: Array.from({ length: runs * 8 }, () => route) })
    const sandbox = createPiSandbox(mock.baseUrl, "pwt-bench-pi-")
    const samples: Array<number> = []
    const aborts: Array<number> = []
    let sessionFile = ""
    try {
      const dir = join(sandbox.workDir, ".pi", "workflows")
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, "cancel-me.workflow.mjs"), `export default ${JSON.stringify(cancelMe)}\n`)
      const env = { PI_WORKFLOWS_DB: join(sandbox.root, "controller.db") }
      const pi = await startPi({ sandbox, extensionPath: extension, env, timeoutMs: 20_000 })
      try {
        const arrivals = timestampLines(pi.child.stdout)
        for (let i = 0; i < runs; i++) {
          const from = arrivals.length
          const cursor = pi.mark()
          await pi.prompt(START_PROMPT)
          await pi.waitFor(isFallbackEnd, { after: cursor, timeoutMs: 20_000, label: "the fallback" })
          await pi.waitForQuiet({ after: cursor, timeoutMs: 20_000, quietMs: 100 })
          const seen = arrivals.slice(from)
          const settled = seen.find((a) => a.record.type === "agent_settled" && a.record.aborted === true)
          const appended = seen.find((a) => isFallbackEnd(a.record))
          if (settled === undefined || appended === undefined || appended.at < settled.at) {
            throw new Error(`pi-delivery run ${i + 1}: no aborted settle before the fallback`)
          }
          samples.push(appended.at - settled.at)
          const cancel = seen.find((a) => a.record.type === "tool_execution_start" && isCancel(a.record))
          if (cancel !== undefined && cancel.at <= settled.at) aborts.push(settled.at - cancel.at)
        }
        sessionFile = pi.sessionFile ?? ""
        await pi.stop()
      } finally {
        await pi.dispose()
      }
    } finally {
      await mock.close()
    }
    const fallbacks = sessionFile === "" ? 0 : customMessages(sessionFile, FALLBACK).length
    sandbox.remove()
    const ms = (value: number) => value.toFixed(2)
    const row = (label: string, values: ReadonlyArray<number>) => {
      const s = summarize(values)
      return [label, ms(s.median), ms(s.p99), ms(Math.min(...values)), ms(Math.max(...values))]
    }
    const all = summarize(samples)
    const checks: ReadonlyArray<Check> = [
      {
        name: "pi-delivery: exactly one fallback per self-cancelled run in the session file",
        ok: fallbacks === runs,
        detail: `${fallbacks} fallbacks for ${runs} runs`
      }
    ]
    const goals: ReadonlyArray<Check> = [
      {
        name: `pi-delivery: agent_settled → fallback appended within ${FALLBACK_GOAL_MS} ms (p99)`,
        ok: all.p99 <= FALLBACK_GOAL_MS,
        detail: `p50 ${ms(all.median)} ms, p99 ${ms(all.p99)} ms over ${runs} runs (first run included)`
      }
    ]
    const markdown = [
      `${runs} self-cancelled runs in one Pi process (Pi RPC mode, dist/extension.js, mock model on 127.0.0.1), ms. ` +
        "Times are when the bench read each event from Pi's stdout; both events travel the same pipe. With " +
        `${runs} samples the p99 is the maximum.`,
      "",
      table(
        ["agent_settled → fallback appended", "median", "p99", "min", "max"],
        [
          row(`all ${runs} runs`, samples),
          row(`runs 2–${runs} (first run excluded)`, samples.slice(1)),
          ["first run (cold code paths)", ms(samples[0] ?? Number.NaN), "", "", ""]
        ]
      ),
      "",
      "0.00 means both events arrived in one read of Pi's stdout: below what this method resolves. For context, " +
        "the Pi-side abort: from the `workflow cancel` tool call starting to the aborted turn's `agent_settled`:",
      "",
      table(
        ["tool_execution_start (cancel) → agent_settled {aborted}", "median", "p99", "min", "max"],
        [row(`${aborts.length} runs`, aborts)]
      ),
      "",
      checkList([...goals, ...checks])
    ].join("\n")
    return { markdown, checks, goals }
  }
}
