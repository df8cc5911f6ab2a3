/**
 * What each schedule step does in the simulated world: engine events are published from a live
 * runner process (quiet decisions inline and checked on the spot, the rest forked into the
 * process so a crash stops them), natural deliveries go through that process's coordinator, and
 * Pi, clock and fault steps act on the shared session or a slot.
 */
import { Effect, Exit } from "effect"
import type { NaturalMessage } from "../../src/delivery/coordinator.ts"
import { FALLBACK_DELIVERY } from "../../src/delivery/fallback.ts"
import { decide } from "../../src/domain/event-policy.ts"
import { intentRequest } from "../../src/domain/event-policy.ts"
import type { Provenance, RunRef, SourceEvent } from "../../src/domain/event-policy.ts"
import { identify } from "../../src/interruption/run-debts.ts"
import type { PiSessionFakeControl } from "../../src/session/pi-session-fake.ts"
import type { PiSessionService } from "../../src/session/pi-session.ts"
import type { Fault } from "../../src/testing/store-faults.ts"
import { fork, type Proc } from "./proc.ts"
import type { NaturalLog, PublishLog, SendLog } from "./records.ts"
import { type ProcId, provenanceOf, type Schedule, type SimFault, type Step } from "./schedule.ts"
import type { SimClock } from "./sim-clock.ts"
import type { SimPi } from "./sim-pi.ts"

export interface RunState {
  interruptions: number
  pending: Provenance | null
  lastEligible: SourceEvent | null
}

export interface StepContext {
  readonly schedule: Schedule
  readonly clock: SimClock
  readonly session: PiSessionService
  readonly fake: PiSessionFakeControl
  readonly pi: SimPi
  readonly procs: readonly [Proc | null, Proc | null]
  readonly runs: readonly RunState[]
  readonly sends: readonly SendLog[]
  readonly publishes: PublishLog[]
  readonly naturals: NaturalLog[]
  readonly quietProblems: string[]
  readonly currentStep: () => number
  readonly startProc: (slot: ProcId) => Effect.Effect<Proc>
  readonly killProc: (slot: ProcId) => Effect.Effect<void>
  readonly restartAll: Effect.Effect<void>
}

const toFault = (fault: SimFault): Fault =>
  fault._tag === "Hang" ? { _tag: "Hang", ms: fault.ms } : fault._tag === "Throw" ? { _tag: "Throw" } : fault

export const makeExecute = (context: StepContext) => {
  const { schedule, clock, fake, pi, procs, runs, sends, publishes, naturals, quietProblems } = context

  const liveProc = (slot: ProcId): Proc | null => procs[slot] ?? procs[slot === 0 ? 1 : 0] ?? null

  const runRef = (run: number): RunRef => {
    const spec = schedule.runs[run]
    if (spec === undefined) throw new Error(`no run ${run}`)
    return {
      runId: spec.runId,
      workflowRef: "sim-workflow@1",
      workflowName: "sim-workflow",
      targetSessionId: spec.targetSessionId,
      origin: spec.origin
    }
  }

  /** Publish from a process: quiet decisions run inline and are checked on the spot. */
  const publish = (proc: Proc, event: SourceEvent) =>
    Effect.gen(function* () {
      const currentStep = context.currentStep()
      const decision = decide(event)
      const request = intentRequest(event, decision)
      if (request === null) {
        const callsBefore = JSON.stringify(yield* proc.faults.calls)
        const sendsBefore = sends.length
        const result = yield* proc.events.publish(event)
        const callsAfter = JSON.stringify(yield* proc.faults.calls)
        if (result.intentId !== null || result.warning !== null) {
          quietProblems.push(`step ${currentStep}: ${event._tag} returned an intent or a warning`)
        }
        if (callsBefore !== callsAfter)
          quietProblems.push(`step ${currentStep}: ${event._tag} touched the store`)
        if (sends.length !== sendsBefore)
          quietProblems.push(`step ${currentStep}: ${event._tag} sent a message`)
        return
      }
      const identified = yield* Effect.either(identify(request))
      const log: PublishLog = {
        proc: proc.slot,
        generation: proc.generation,
        step: currentStep,
        event,
        expectedIntent: identified._tag === "Right" ? identified.right.intentId : null,
        eligible: request.eligible,
        startedAt: clock.now(),
        result: null,
        interrupted: false,
        abortedAt: null
      }
      publishes.push(log)
      yield* fork(
        proc,
        proc.events.publish(event).pipe(
          Effect.onExit((exit) =>
            Effect.sync(() => {
              if (Exit.isSuccess(exit)) log.result = exit.value
              else log.interrupted = Exit.isInterrupted(exit)
            })
          )
        )
      )
    })

  const natural = (proc: Proc, run: number, kind: NaturalMessage["kind"]) =>
    Effect.gen(function* () {
      const currentStep = context.currentStep()
      const runId = runRef(run).runId
      const content = `${kind} for ${runId} at step ${currentStep} (p${proc.slot}.${proc.generation})`
      const lifecycle = yield* context.session.lifecycle
      const log: NaturalLog = {
        proc: proc.slot,
        generation: proc.generation,
        step: currentStep,
        runId,
        content,
        outcome: "pending",
        startedUnderHold: lifecycle.userHold || lifecycle.shuttingDown
      }
      naturals.push(log)
      const message: NaturalMessage = {
        kind,
        runId,
        message: {
          customType: kind === "presentation" ? "pi-workflows-presentation" : "pi-workflows-agent-step",
          content,
          display: true,
          details: { runId }
        },
        options: FALLBACK_DELIVERY
      }
      yield* fork(
        proc,
        proc.coordinator.deliverNatural(message).pipe(
          Effect.onExit((exit) =>
            Effect.sync(() => {
              log.outcome = Exit.isSuccess(exit)
                ? "sent"
                : Exit.isInterrupted(exit)
                  ? "interrupted"
                  : "failed"
            })
          )
        )
      )
    })

  const execute = (step: Step): Effect.Effect<void> =>
    Effect.gen(function* () {
      switch (step._tag) {
        case "Interrupt": {
          const proc = liveProc(step.proc)
          const state = runs[step.run]
          if (proc === null || state === undefined) return
          // While settle handlers run no turn can start (Pi defers it), so none can be stopped.
          if ((yield* fake.phase) === "idle" && !pi.emitting()) yield* fake.startTurn
          const provenance = {
            ...provenanceOf(step.run, state.interruptions, step.cause),
            cause: step.cause
          }
          state.interruptions++
          state.pending = provenance
          return yield* publish(proc, {
            _tag: "ActiveTurnInterrupted",
            run: runRef(step.run),
            provenance,
            reason: `interrupted (${step.cause})`
          })
        }
        case "Prompt": {
          const proc = liveProc(step.proc)
          const state = runs[step.run]
          if (proc === null || state === undefined) return
          state.pending = null
          return yield* natural(proc, step.run, "workflowPrompt")
        }
        case "Complete": {
          const proc = liveProc(step.proc)
          const state = runs[step.run]
          if (proc === null || state === undefined) return
          state.pending = null
          return yield* natural(proc, step.run, "presentation")
        }
        case "Terminal": {
          const proc = liveProc(step.proc)
          const state = runs[step.run]
          if (proc === null || state === undefined) return
          // A claim-loss abort is not recorded on the run (the new owner does not know it).
          const provenance = state.pending?.cause === "claimLost" ? null : state.pending
          const at = provenance ?? provenanceOf(step.run, state.interruptions, "failed")
          const event: SourceEvent = {
            _tag: "RunTerminal",
            run: runRef(step.run),
            state: step.state,
            nodeId: at.nodeId,
            attemptId: at.attemptId,
            reason: `run ${step.state}`,
            provenance,
            interruption: state.interruptions
          }
          state.lastEligible = event
          return yield* publish(proc, event)
        }
        case "Handoff": {
          const proc = liveProc(step.proc)
          const state = runs[step.run]
          if (proc === null || state === undefined || state.pending === null) return
          const event: SourceEvent = {
            _tag: "HandoffEnded",
            run: runRef(step.run),
            provenance: state.pending,
            observedState: "failed",
            reason: "no runner continued the run"
          }
          state.lastEligible = event
          return yield* publish(proc, event)
        }
        case "LaunchFailed": {
          const proc = liveProc(step.proc)
          const state = runs[step.run]
          if (proc === null || state === undefined) return
          const event: SourceEvent = {
            _tag: "LaunchFailed",
            run: runRef(step.run),
            reason: "queue row failed"
          }
          state.lastEligible = event
          return yield* publish(proc, event)
        }
        case "Quiet": {
          const proc = liveProc(step.proc)
          if (proc === null) return
          return yield* publish(proc, { _tag: "Quiet", run: runRef(step.run), kind: step.kind })
        }
        case "Republish": {
          const proc = liveProc(step.proc)
          const event = runs[step.run]?.lastEligible
          if (proc === null || event === null || event === undefined) return
          return yield* publish(proc, event)
        }
        case "UserTurn":
          return yield* pi.userTurn
        case "Settle":
          return yield* pi.settle
        case "Periodic": {
          const proc = liveProc(step.proc)
          if (proc !== null) yield* fork(proc, proc.coordinator.syncFallbacks("periodic"))
          return
        }
        case "SendFailures":
          return pi.failSends(step.count)
        case "StoreFault": {
          const proc = procs[step.proc]
          if (proc !== null)
            yield* proc.faults.inject(step.operation, toFault(step.fault), { times: step.times })
          return
        }
        case "ClearFaults": {
          const proc = procs[step.proc]
          if (proc !== null) yield* proc.faults.clear()
          return
        }
        case "Clock":
          return yield* clock.advance(step.ms)
        case "Restart": {
          yield* context.killProc(step.proc)
          const proc = yield* context.startProc(step.proc)
          return yield* fork(proc, proc.coordinator.onSessionStart)
        }
        case "Kill":
          return yield* context.killProc(step.proc)
        case "Hold":
          return yield* fake.setUserHold(step.on)
        case "Shutdown":
          return yield* fake.setShuttingDown(true)
        case "RestartAll":
          return yield* context.restartAll
      }
    })

  return execute
}
