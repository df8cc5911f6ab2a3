/**
 * Schedules for the deterministic simulation: plain data, generated from a seed. The generator
 * keeps a small model of each run's lifecycle (queued → running → ended, interruption ordinals,
 * pending abort provenance) so every step it emits is one the engine could really produce; the
 * world (`world.ts`) executes the steps and the invariants (`invariants.ts`) judge the outcome.
 */
import type { ActiveTurnCause, Provenance, QuietKind, TerminalState } from "../../src/domain/event-policy.ts"
import type { StoreOperation } from "../../src/testing/store-faults.ts"
import { makePrng, type Prng } from "./prng.ts"

/** Two process slots share the database file and the Pi session (a stale and a new runner). */
export type ProcId = 0 | 1

export type SimFault =
  | { readonly _tag: "Busy" }
  | { readonly _tag: "ReadOnly" }
  | { readonly _tag: "Throw" }
  | { readonly _tag: "Hang"; readonly ms: number }

export type Step =
  /** The run's workflow turn is active (start one if the session is idle), then it is interrupted. */
  | {
      readonly _tag: "Interrupt"
      readonly run: number
      readonly cause: ActiveTurnCause
      readonly proc: ProcId
    }
  /** The engine sends the run's next workflow prompt (forked: it may wait for idle or a claim). */
  | { readonly _tag: "Prompt"; readonly run: number; readonly proc: ProcId }
  /** The run completes; its result presentation is delivered (forked). */
  | { readonly _tag: "Complete"; readonly run: number; readonly proc: ProcId }
  /** The run ends cancelled, timed out or failed; with the pending abort's provenance, if any. */
  | { readonly _tag: "Terminal"; readonly run: number; readonly state: TerminalState; readonly proc: ProcId }
  /** Handoff evidence: the run's claim was lost and nobody will continue it. */
  | { readonly _tag: "Handoff"; readonly run: number; readonly proc: ProcId }
  /** A queued launch fails before its first prompt. */
  | { readonly _tag: "LaunchFailed"; readonly run: number; readonly proc: ProcId }
  /** Direct cancel, pause, user hold or shutdown reported for a run: never a turn. */
  | { readonly _tag: "Quiet"; readonly run: number; readonly kind: QuietKind; readonly proc: ProcId }
  /** Publish an ended run's last eligible event again (retry, another process, recovery). */
  | { readonly _tag: "Republish"; readonly run: number; readonly proc: ProcId }
  /** The user prompts the agent: a turn starts if the session is idle. */
  | { readonly _tag: "UserTurn" }
  /** Pi's `agent_settled`: waiters are released, then every live process runs `onSettled`. */
  | { readonly _tag: "Settle" }
  | { readonly _tag: "Periodic"; readonly proc: ProcId }
  | { readonly _tag: "SendFailures"; readonly count: number }
  | {
      readonly _tag: "StoreFault"
      readonly proc: ProcId
      readonly operation: StoreOperation
      readonly fault: SimFault
      readonly times: number
    }
  | { readonly _tag: "ClearFaults"; readonly proc: ProcId }
  | { readonly _tag: "Clock"; readonly ms: number }
  /** Crash the process (SIGKILL: its fibers stop wherever they are) and start a new one. */
  | { readonly _tag: "Restart"; readonly proc: ProcId }
  /** Crash the process without a replacement. */
  | { readonly _tag: "Kill"; readonly proc: ProcId }
  | { readonly _tag: "Hold"; readonly on: boolean }
  /** `session_shutdown`: nothing may be delivered until every process has been restarted. */
  | { readonly _tag: "Shutdown" }
  | { readonly _tag: "RestartAll" }

/** A step and how many scheduler turns the other fibers get before the next one. */
export interface Scheduled {
  readonly step: Step
  readonly gap: number
}

export interface RunSpec {
  readonly runId: string
  readonly origin: "tool" | "command"
  /** `sim-session` is the live session; a few runs target another one, never delivered here. */
  readonly targetSessionId: string
}

export interface Schedule {
  readonly seed: number
  readonly runs: ReadonlyArray<RunSpec>
  readonly steps: ReadonlyArray<Scheduled>
  /** Whether processes run the periodic sync fiber (10 s). */
  readonly periodic: boolean
  /** Whether the second process slot is live from the start. */
  readonly twoProcs: boolean
}

export const SESSION = "sim-session"
export const OTHER_SESSION = "other-session"

export interface GenerateOptions {
  readonly steps?: number
}

type RunStatus = "queued" | "running" | "ended"

interface RunModel {
  status: RunStatus
  interruptions: number
  /** Abort provenance not yet followed by a natural successor. */
  pending: Provenance | null
  ended: "eligible" | "other" | null
}

const OPERATIONS: ReadonlyArray<StoreOperation> = [
  "ensure",
  "get",
  "claimForRun",
  "claimEligibleForSession",
  "makeEligible",
  "resolve",
  "release",
  "list"
]

const fault = (prng: Prng): SimFault =>
  prng.weighted<SimFault>([
    [{ _tag: "Busy" }, 4],
    [{ _tag: "ReadOnly" }, 2],
    [{ _tag: "Throw" }, 1],
    [{ _tag: "Hang", ms: prng.pick([50, 400, 5_000, 40_000]) }, 2]
  ])

/** The provenance a run's next interruption gets (ordinal from the run's own counter). */
export const provenanceOf = (run: number, interruption: number, cause: Provenance["cause"]): Provenance => ({
  cause,
  nodeId: `node-${run}-${interruption}`,
  attemptId: `attempt-${run}-${interruption}`,
  interruption
})

export const generate = (seed: number, options: GenerateOptions = {}): Schedule => {
  const prng = makePrng(seed)
  const runCount = prng.int(2, 5)
  const runs: RunSpec[] = Array.from({ length: runCount }, (_, i) => ({
    runId: `run-${i}`,
    origin: prng.bool(0.85) ? "tool" : "command",
    targetSessionId: prng.bool(0.9) ? SESSION : OTHER_SESSION
  }))
  const model: RunModel[] = runs.map(() => ({
    status: prng.bool(0.8) ? "running" : "queued",
    interruptions: 0,
    pending: null,
    ended: null
  }))
  const twoProcs = prng.bool(0.5)
  const live: [boolean, boolean] = [true, twoProcs]
  let shutdown = false
  let hold = false
  const steps: Scheduled[] = []
  const length = options.steps ?? prng.int(20, 60)

  const liveProcs = (): ProcId[] => ([0, 1] as const).filter((p) => live[p])
  const proc = (): ProcId => prng.pick(liveProcs())
  const runsIn = (status: RunStatus) => model.flatMap((m, i) => (m.status === status ? [i] : []))
  /** One of `candidates` (a seeded pick) with its model, or null when there is none. */
  const pickRun = (candidates: ReadonlyArray<number>) => {
    if (candidates.length === 0) return null
    const run = prng.pick(candidates)
    const m = model[run]
    return m === undefined ? null : { run, m }
  }

  const candidates = (): Array<readonly [() => Step | null, number]> => [
    [
      () => {
        const running = runsIn("running")
        const picked = pickRun(running)
        if (picked === null) return null
        const { run, m } = picked
        const cause = prng.pick<ActiveTurnCause>([
          "agentCancelled",
          "timedOut",
          "controllerInterrupted",
          "claimLost"
        ])
        m.pending = provenanceOf(run, m.interruptions, cause)
        m.interruptions += 1
        return { _tag: "Interrupt", run, cause, proc: proc() }
      },
      10
    ],
    [
      () => {
        if (hold || shutdown) return null
        const running = runsIn("running")
        if (running.length === 0) return null
        const run = prng.pick(running)
        const m = model[run]
        if (m !== undefined) m.pending = null
        return { _tag: "Prompt", run, proc: proc() }
      },
      6
    ],
    [
      () => {
        if (hold || shutdown) return null
        const running = runsIn("running")
        const picked = pickRun(running)
        if (picked === null) return null
        const { run, m } = picked
        m.status = "ended"
        m.pending = null
        m.ended = "other"
        return { _tag: "Complete", run, proc: proc() }
      },
      2
    ],
    [
      () => {
        const running = runsIn("running")
        const picked = pickRun(running)
        if (picked === null) return null
        const { run, m } = picked
        m.status = "ended"
        m.ended = "eligible"
        return {
          _tag: "Terminal",
          run,
          state: prng.pick<TerminalState>(["cancelled", "timed_out", "failed"]),
          proc: proc()
        }
      },
      6
    ],
    [
      () => {
        const handoffs = model.flatMap((m, i) =>
          m.status === "running" && m.pending?.cause === "claimLost" ? [i] : []
        )
        const picked = pickRun(handoffs)
        if (picked === null) return null
        const { run, m } = picked
        m.status = "ended"
        m.ended = "eligible"
        return { _tag: "Handoff", run, proc: proc() }
      },
      4
    ],
    [
      () => {
        const queued = runsIn("queued")
        const picked = pickRun(queued)
        if (picked === null) return null
        const { run, m } = picked
        m.status = "ended"
        m.ended = "eligible"
        return { _tag: "LaunchFailed", run, proc: proc() }
      },
      3
    ],
    [
      () => {
        const queued = runsIn("queued")
        if (queued.length === 0) return null
        const m = model[prng.pick(queued)]
        if (m !== undefined) m.status = "running"
        return null // activation itself publishes nothing; the next pick acts on the running run
      },
      2
    ],
    [
      () => {
        const kind = prng.pick<QuietKind>(["directCancel", "pause", "userHold", "shutdown"])
        const run = prng.int(0, runs.length - 1)
        const m = model[run]
        if (kind === "directCancel" && m !== undefined && m.status === "running") {
          m.status = "ended"
          m.pending = null
          m.ended = "other"
        }
        return { _tag: "Quiet", run, kind, proc: proc() }
      },
      3
    ],
    [
      () => {
        const ended = model.flatMap((m, i) => (m.ended === "eligible" ? [i] : []))
        return ended.length === 0 ? null : { _tag: "Republish", run: prng.pick(ended), proc: proc() }
      },
      2
    ],
    [() => ({ _tag: "UserTurn" }), 4],
    [() => ({ _tag: "Settle" }), 12],
    [() => ({ _tag: "Periodic", proc: proc() }), 5],
    [() => ({ _tag: "SendFailures", count: prng.int(1, 3) }), 2],
    [
      () => ({
        _tag: "StoreFault",
        proc: proc(),
        operation: prng.pick(OPERATIONS),
        fault: fault(prng),
        times: prng.int(1, 4)
      }),
      4
    ],
    [() => ({ _tag: "ClearFaults", proc: proc() }), 2],
    [() => ({ _tag: "Clock", ms: prng.pick([10, 100, 600, 5_000, 15_000, 31_000]) }), 8],
    [
      () => {
        const slot = prng.pick<ProcId>([0, 1])
        live[slot] = true
        return { _tag: "Restart", proc: slot }
      },
      3
    ],
    [
      () => {
        if (liveProcs().length < 2) return null
        const slot = prng.pick<ProcId>([0, 1])
        live[slot] = false
        return { _tag: "Kill", proc: slot }
      },
      1
    ],
    [
      () => {
        hold = !hold
        return { _tag: "Hold", on: hold }
      },
      2
    ],
    [
      () => {
        if (shutdown) return null
        shutdown = true
        return { _tag: "Shutdown" }
      },
      1
    ],
    [
      () => {
        if (!shutdown) return null
        shutdown = false
        live[0] = true
        return { _tag: "RestartAll" }
      },
      shutdown ? 6 : 0
    ]
  ]

  while (steps.length < length) {
    const pool = candidates()
    for (let attempt = 0; attempt < 20; attempt++) {
      const make = prng.weighted(pool)
      const step = make()
      if (step !== null) {
        steps.push({
          step,
          gap: prng.weighted<number>([
            [0, 3],
            [1, 3],
            [2, 2],
            [5, 1],
            [20, 1]
          ])
        })
        break
      }
    }
  }
  return { seed, runs, steps, periodic: prng.bool(0.5), twoProcs }
}

export const describeStep = (step: Step): string => {
  const { _tag, ...rest } = step
  const fields = Object.entries(rest).map(
    ([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : String(v)}`
  )
  return fields.length === 0 ? _tag : `${_tag}(${fields.join(" ")})`
}
