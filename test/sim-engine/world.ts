/**
 * The world one engine schedule runs in: a real SQLite file, one fake Pi session (its branch
 * survives restarts, like a session file) and two process slots. Each process is the real
 * application graph (stores, the successor-turn core, the engine with its runner fibers), built by
 * `src/app/layers.ts` itself (`App.layerWith`), with the stores behind a fault gate and every store
 * call a scheduling point. The schedule drives it only through what Pi drives: the `workflow` tool,
 * the `/workflow` command and the session hooks. Nothing here publishes a source event itself.
 *
 * A crash is a SIGKILL: from that instant the process's store calls and sends do nothing, its clock
 * stops mattering (its sleeps end at once, so whatever its fibers retry ends while its scope closes;
 * its finalizers cannot write), and the messages Pi had not written yet die with it. The process
 * itself is `process.ts`; the session as each process sees it, `session-view.ts`.
 */
import { Deferred, Effect, Exit, type Fiber, Layer, Option, Scope } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle, classifySettle, onSessionStart, onShutdown } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { makeFake } from "../../src/session/pi-session-fake.ts"
import type { SimClock } from "../sim/sim-clock.ts"
import {
  appLayer,
  type CrashPlan,
  die,
  gateOf,
  type Mutation,
  type Process,
  SESSION,
  type SendLog,
  type SimServices
} from "./process.ts"
import type { Proc, Step } from "./schedule.ts"
import { makeSessionView } from "./session-view.ts"
import { waitingQuestion } from "../support/fixtures.ts"

export {
  type CrashPlan,
  LEASE_MS,
  type Mutation,
  RUN_LEASE_MS,
  SESSION,
  type SendLog,
  SYNC_INTERVAL_MS
} from "./process.ts"

export const makeWorld = (
  filename: string,
  clock: SimClock,
  mutation: Mutation | null,
  crashPlan: CrashPlan = {},
  /** Workflows of scripted tests; the simulation's own when omitted (its seeds depend on them). */
  workflows?: ReadonlyArray<unknown>
) =>
  Effect.gen(function* () {
    let crashFired = false
    let storeCalls = 0
    /** True (and the process is dead from now on) when the plan says this is the moment. */
    const crashNow = (p: Process, what: { readonly point?: string; readonly operation?: string }) => {
      const storeCall = what.operation !== undefined && what.operation === crashPlan.beforeStore
      if (storeCall) storeCalls++
      const due =
        !crashFired &&
        ((what.point !== undefined && what.point === crashPlan.point) ||
          (storeCall && storeCalls > (crashPlan.skip ?? 0)))
      if (due) {
        crashFired = true
        die(p)
      }
      return due
    }
    const { session: fakeSession, control: fake } = yield* makeFake({ sessionId: SESSION })
    const procs: [Process | null, Process | null] = [null, null]
    const generations: [number, number] = [0, 0]
    const sends: Array<SendLog> = []
    const userCancelled = new Set<string>()
    const problems: Array<string> = []
    let step = -1
    let held = false

    const point = Effect.suspend(() => {
      clock.touch()
      return Effect.yieldNow()
    })

    const { write, sessionOf } = makeSessionView({
      session: fakeSession,
      fake,
      mutation,
      sends,
      point,
      step: () => step
    })
    const gateHooks = {
      point,
      touch: clock.touch,
      crashHere: (p: Process, operation: string) => (crashNow(p, { operation }) ? killLater(p) : null)
    }

    const startProc = (slot: Proc) =>
      Effect.gen(function* () {
        const generation = ++generations[slot]
        const scope = yield* Scope.make()
        const processClock = clock.forProcess()
        const self = () => (procs[slot]?.generation === generation ? procs[slot] : null)
        const layer = appLayer({
          filename,
          token: `p${slot}.${generation}`,
          gate: gateOf(self, gateHooks),
          session: sessionOf(self),
          ...(workflows === undefined ? {} : { workflows }),
          crashPoints: {
            reached: (point) =>
              Effect.suspend(() => {
                const p = self()
                return p !== null && crashNow(p, { point })
                  ? Effect.zipRight(killLater(p), Effect.die(new Error("killed")))
                  : Effect.void
              })
          }
        })
        const process: Process = {
          slot,
          generation,
          scope,
          clock: processClock,
          context: null,
          fault: null,
          dead: false,
          deferred: [],
          settling: 0,
          settleWaiters: []
        }
        procs[slot] = process
        process.context = yield* Layer.build(layer).pipe(
          Scope.extend(scope),
          Effect.withClock(processClock.clock)
        )
        // The shape of the old hang: closing the scope waits (uninterruptibly, as a layer release
        // does) on a clock nobody moves meanwhile.
        if (mutation === "hang")
          yield* Scope.addFinalizer(scope, Effect.uninterruptible(Effect.sleep("1 hour")))
        return process
      })

    /** Run `program` inside the process (its fibers die with it); wait until it is blocked or done. */
    const within = <A, E>(proc: Process, program: Effect.Effect<A, E, never>) =>
      Effect.gen(function* () {
        const fiber = yield* Effect.forkIn(Effect.withClock(program, proc.clock.clock), proc.scope)
        yield* clock.quiesce
        return fiber
      })

    const provide = <A, E>(proc: Process, program: Effect.Effect<A, E, SimServices>) =>
      proc.context === null
        ? Effect.die(new Error("the process has not started"))
        : Effect.provide(program, proc.context).pipe(Effect.withClock(proc.clock.clock))

    const live = (): Array<Process> => procs.filter((p): p is Process => p !== null && !p.dead)

    const kill = (slot: Proc) =>
      Effect.gen(function* () {
        const proc = procs[slot]
        // A process a crash plan killed is dead already; its slot is freed here.
        if (proc === null) return
        die(proc)
        procs[slot] = null
        yield* Effect.exit(Scope.close(proc.scope, Exit.void))
      })

    /**
     * Wait for a fiber Pi awaits, moving the clock in small steps meanwhile (its sleeps are what it
     * waits on), for at most `limitMs` of simulated time; after that Pi goes on without it.
     */
    const awaitAdvancing = (fiber: Fiber.RuntimeFiber<unknown, unknown>, limitMs: number) =>
      Effect.gen(function* () {
        yield* clock.quiesce
        for (let waited = 0; waited < limitMs && fiber.unsafePoll() === null; waited += 250) {
          yield* clock.advance(250)
        }
      })

    /** A crash plan killed `p` from inside one of its own fibers: its scope closes from outside. */
    const killLater = (p: Process) =>
      Effect.asVoid(
        Effect.forkDaemon(Effect.suspend(() => (procs[p.slot] === p ? kill(p.slot) : Effect.void)))
      )

    /** Pi's `agent_settled`, as src/extension/session-app.ts forwards it to every process. */
    const settle = (aborted: boolean) =>
      Effect.gen(function* () {
        const procsNow = live()
        for (const proc of procsNow) proc.settling++
        const fibers: Array<Fiber.RuntimeFiber<void, never>> = []
        for (const proc of procsNow) {
          const handler = provide(
            proc,
            Effect.gen(function* () {
              const outcome = yield* classifySettle(aborted)
              if (outcome.userHold) {
                held = true
                yield* fake.setUserHold(true)
              }
            })
          )
          // Pi awaits the handler for up to 5 s; time passes meanwhile (a store retry sleeps on it).
          yield* awaitAdvancing(yield* Effect.forkIn(Effect.exit(handler), proc.scope), 5_000)
        }
        yield* fake.settle({ aborted })
        for (const proc of procsNow) {
          const after = provide(proc, afterSettle(held, { aborted })).pipe(
            Effect.ensuring(
              Effect.suspend(() => {
                proc.settling--
                if (proc.settling > 0 || proc.dead) return Effect.void
                const pending = proc.deferred
                proc.deferred = []
                const waiting = proc.settleWaiters
                proc.settleWaiters = []
                return Effect.zipRight(
                  Effect.forEach(pending, write, { discard: true }),
                  Effect.forEach(waiting, (waiter) => Deferred.succeed(waiter, undefined), { discard: true })
                )
              })
            )
          )
          fibers.push(yield* within(proc, after))
        }
        return fibers
      })

    const newestStep = Effect.map(fake.branch, (branch) =>
      branch.filter((m) => m.customType === "pi-workflows-agent-step").at(-1)
    )
    /** The newest waiting presentation's run and request (the question the model and user see). */
    const newestQuestion = Effect.map(
      fake.branch,
      (branch) => branch.flatMap((m) => waitingQuestion(m.details) ?? []).at(-1) ?? null
    )

    const execute = (s: Step, index: number) =>
      Effect.gen(function* () {
        step = index
        const proc =
          s._tag === "Settle" || s._tag === "Escape" || s._tag === "Advance" || s._tag === "Shutdown"
            ? null
            : procs[s.proc]
        const phase = yield* fake.phase
        switch (s._tag) {
          case "ToolStart": {
            if (proc === null || phase === "aborting") return
            if (phase === "idle") yield* fake.startTurn
            yield* within(proc, provide(proc, runTool({ _tag: "start", workflow: s.workflow })))
            return
          }
          case "ModelSubmit": {
            if (proc === null || phase !== "busy") return
            const newest = yield* newestStep
            const details = newest?.details
            const requestId =
              typeof details === "object" && details !== null && "requestId" in details
                ? details.requestId
                : undefined
            if (typeof requestId !== "string") return
            yield* within(proc, provide(proc, runTool({ _tag: "submit", requestId, output: { done: true } })))
            return
          }
          case "ModelCancel": {
            if (proc === null || phase !== "busy") return
            yield* within(proc, provide(proc, runTool({ _tag: "cancel" })))
            return
          }
          case "Settle": {
            if (phase === "idle") return
            yield* settle(phase === "aborting")
            return
          }
          case "Escape": {
            if (phase !== "busy") return
            yield* settle(true)
            return
          }
          case "UserCancel":
          case "UserResume": {
            if (proc === null) return
            const input = s._tag === "UserCancel" ? { _tag: "cancel" as const } : { _tag: "resume" as const }
            // The run a direct cancel stops owes the model nothing: remember which one it was.
            const target = provide(
              proc,
              Effect.flatMap(Engine, (engine) => engine.active(SESSION))
            ).pipe(
              Effect.tap((active) =>
                Effect.sync(() => {
                  if (s._tag === "UserCancel" && Option.isSome(active)) userCancelled.add(active.value.runId)
                })
              ),
              Effect.ignore
            )
            const release = Effect.zipRight(
              target,
              provide(proc, runCommand({ ...input, runId: undefined }))
            ).pipe(
              Effect.tap((reply) =>
                reply.releaseHold
                  ? Effect.zipRight(
                      Effect.sync(() => {
                        held = false
                      }),
                      fake.setUserHold(false)
                    )
                  : Effect.void
              ),
              Effect.asVoid
            )
            yield* within(proc, release)
            return
          }
          case "UserStart": {
            if (proc === null) return
            const started = provide(
              proc,
              runCommand({ _tag: "start", workflow: s.workflow, input: null })
            ).pipe(
              Effect.flatMap((reply) =>
                Effect.flatMap(fake.phase, (now) =>
                  reply.activate && now === "idle" ? provide(proc, afterSettle(held)) : Effect.void
                )
              )
            )
            yield* within(proc, started)
            return
          }
          case "Advance":
            yield* clock.advance(s.ms)
            return
          case "Crash":
            yield* kill(s.proc)
            return
          case "Start": {
            if (procs[s.proc] !== null) return
            if (live().length === 0) {
              // A new Pi process: nothing runs yet, and it is not shutting down.
              if (phase !== "idle") yield* fake.settle({ aborted: true })
              yield* fake.setShuttingDown(false)
            }
            const started = yield* startProc(s.proc)
            yield* within(started, provide(started, onSessionStart))
            return
          }
          case "Shutdown": {
            yield* fake.setShuttingDown(true)
            for (const p of live()) {
              // Time passes while Pi runs its shutdown handler (store retries wait on the clock);
              // after 5 s the process ends whatever the handler is doing.
              yield* awaitAdvancing(yield* Effect.forkIn(Effect.exit(provide(p, onShutdown)), p.scope), 5_000)
              yield* kill(p.slot)
            }
            return
          }
          case "Fault":
            if (proc !== null) proc.fault = s.kind
            return
          case "Heal":
            if (proc !== null) proc.fault = null
            return
          case "Answer": {
            const question = yield* newestQuestion
            if (proc === null || question === null) return
            if (s.by === "agent") {
              // The model answers in its turn; the user answers whenever.
              if (phase !== "busy") return
              yield* within(
                proc,
                provide(proc, runTool({ _tag: "answer", requestId: question.requestId, answer: "yes" }))
              )
              return
            }
            yield* within(
              proc,
              provide(proc, runCommand({ _tag: "answer", runId: question.runId, text: "yes" }))
            )
            return
          }
        }
      })

    return {
      fake,
      lifecycle: fakeSession.lifecycle,
      sends,
      userCancelled,
      problems,
      live,
      startProc,
      execute,
      settle,
      kill,
      within,
      provide,
      healAll: Effect.sync(() => {
        for (const p of live()) p.fault = null
      }),
      releaseHold: Effect.zipRight(
        Effect.sync(() => {
          held = false
        }),
        fake.setUserHold(false)
      ),
      /** Whether the crash plan has killed a process. */
      crashed: () => crashFired,
      setStep: (index: number) => {
        step = index
      }
    }
  })

export type World = Effect.Effect.Success<ReturnType<typeof makeWorld>>
