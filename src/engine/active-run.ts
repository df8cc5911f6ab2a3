/**
 * The in-memory side of a run this process is executing: its claim, its control signals and
 * what the runner knows about the visit in flight. Durable state lives in the RunStore; this
 * is what must survive only as long as the runner fiber does.
 *
 * And who holds a claim: run claims name their owner process, so a restarted session can tell
 * that the process holding a claim is gone instead of waiting out the lease. A claim token reads
 * `claim-<uuid>@<host>/<boot id>/<pid>`. On the same machine (same host and boot id) a pid that
 * no longer exists proves the owner dead. Across machines nothing is provable: only the lease
 * decides there. A reused pid only makes a dead owner look alive (the lease still ends it).
 */
import type { WaitRecord } from "../store/run-waits.ts"
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { hostname, uptime } from "node:os"
import { Deferred, Effect, Option, Ref, type Schedule } from "effect"
import type { QuietKind, Provenance, RunRef } from "../domain/event-policy.ts"
import type { CoordinatorService } from "../delivery/coordinator.ts"
import type { SourceEventsService } from "../interruption/source-events.ts"
import type { Fence, RunRecord, RunStoreService, StepRecord } from "../store/run-store.ts"
import type { NodeResult, VisitRecord } from "./definition.ts"
import type { StepProgressService } from "./messages.ts"
import type { LoadedNode, LoadedWorkflow } from "./validate.ts"

/** Why a runner must stop its current visit now. The first request wins. */
export type StopRequest =
  | { readonly _tag: "Cancel"; readonly by: "agent" | "user" }
  | { readonly _tag: "Park"; readonly reason: string; readonly quiet: QuietKind | null }
  | { readonly _tag: "Interrupt"; readonly reason: string; readonly afterwards: "park" | "fail" }
  | { readonly _tag: "ClaimLost" }

export interface VisitState {
  readonly nodeId: string
  readonly attemptId: string
  readonly node: LoadedNode
  /** Completed with the output once a submission is durably accepted. */
  readonly submitted: Deferred.Deferred<unknown>
  /** Set once the request row exists. */
  readonly requestId: string | null
  /** The prompt reached the coordinator: an agent turn is working on this request. */
  readonly delivered: boolean
  /** The resolved limit (undefined until resolved). */
  readonly timeoutMs: number | null | undefined
  /**
   * When the limit started counting (epoch ms): set when this visit continues one a dead or
   * expired owner left in flight (`deadlineOrigin`); null means it counts from this visit.
   */
  readonly deadlineFrom: number | null
  /** When this visit began (epoch ms, the engine's Clock). */
  readonly startedAt: number
}

export interface RunMemory {
  readonly visit: VisitState | null
  /** Next interruption ordinal. */
  readonly interruptions: number
  /** The abort no natural successor has followed yet; terminal events carry it. */
  readonly outstanding: Provenance | null
  /**
   * An abort whose natural successor went out but whose clear on the row has not landed yet:
   * the run's end clears it (`RunTransition.End.answered`) instead of reusing it.
   */
  readonly answered: Provenance | null
  /**
   * `outputs`, `results` and `history` grow in place, one entry per finished visit (copying them
   * at every step made a step cost as much as the run so far). A node's context holds these very
   * objects, as it always did; a reference a node keeps past its visit sees later steps too.
   */
  readonly outputs: Record<string, unknown>
  readonly results: Record<string, NodeResult>
  /** Finished visits in step order (what `StepContext.history` shows). */
  readonly history: Array<VisitRecord>
  /** Visits with an outcome (what maxSteps counts). */
  readonly finished: number
  readonly claimLostReported: boolean
  /** A renewal found the claim gone: no write of this runner can land any more. */
  readonly claimGone: boolean
  /**
   * Until when (epoch ms) this runner's lease surely holds: the claim's expiry, then the start
   * of each successful renewal plus the lease. Past it another process may take the run over.
   */
  readonly leaseUntil: number
}

export interface ActiveRun {
  readonly runId: string
  readonly ref: RunRef
  readonly fence: Fence
  readonly workflow: LoadedWorkflow
  readonly input: unknown
  readonly lock: Effect.Semaphore
  readonly stop: Deferred.Deferred<StopRequest>
  /** Completed when the runner fiber has stopped (ended, parked, held or lost its claim). */
  readonly finished: Deferred.Deferred<void>
  readonly memory: Ref.Ref<RunMemory>
}

export interface EngineSettings {
  readonly defaultTimeoutMs: number
  readonly leaseMs: number
  readonly renewEveryMs: number
}

/** What the runner needs, resolved once by the engine. */
/** What the runner hands on once the run waits at a checkpoint: its presentation is sent after. */
export interface Waiting {
  readonly wait: WaitRecord
  readonly workflowName: string
  /** The runner's outstanding abort's intent, which the presentation answers (see visit.ts). */
  readonly answers: string | undefined
}

export interface RunnerDeps {
  readonly store: RunStoreService
  readonly coordinator: CoordinatorService
  readonly events: SourceEventsService
  readonly settings: EngineSettings
  /** How a settle that failed is retried (`TimingPolicy.settleRetry`, as the engine was built with). */
  readonly settleRetry: Schedule.Schedule<unknown, unknown>
  /** True once the engine is shutting down or its scope is closing. */
  readonly closing: Effect.Effect<boolean>
  /** Run an effect detached from the runner (presentations), in the engine's scope. */
  readonly background: (effect: Effect.Effect<void>) => Effect.Effect<void>
  /** Where `ctx.progress` reports go, when the app wires notifications. */
  readonly progress: Option.Option<StepProgressService>
  /** The run now waits at a checkpoint: send its presentation, watch its deadline (engine-live.ts). */
  readonly onWait: (waiting: Waiting) => Effect.Effect<void>
}

export const newId = (prefix: string) => Effect.sync(() => `${prefix}-${randomUUID()}`)

/** Run IDs: sortable by creation time, readable (workflow slug) and unique (random suffix). */
export const runIdOf = (name: string, now: number) =>
  Effect.map(newId("x"), (id) => {
    const stamp = new Date(now)
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.\d+Z$/, "Z")
    const slug = name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .slice(0, 64)
    return `${stamp}-${slug}-${id.slice(2, 10)}`
  })

export const workflowRefOf = (name: string, revision: number | null) =>
  revision === null ? name : `${name}@${revision}`

export const runRefOf = (record: RunRecord): RunRef => ({
  runId: record.runId,
  workflowRef: record.workflowRef,
  workflowName: record.workflowName,
  targetSessionId: record.targetSessionId,
  origin: record.origin
})

/** The in-memory run for a record just claimed with `token`, its memory rebuilt from `steps`. */
export const makeActiveRun = (
  record: RunRecord,
  token: string,
  workflow: LoadedWorkflow,
  steps: ReadonlyArray<StepRecord>
): Effect.Effect<ActiveRun> =>
  Effect.gen(function* () {
    return {
      runId: record.runId,
      ref: runRefOf(record),
      fence: { runId: record.runId, token },
      workflow,
      input: record.input,
      lock: yield* Effect.makeSemaphore(1),
      stop: yield* Deferred.make<StopRequest>(),
      finished: yield* Deferred.make<void>(),
      memory: yield* Ref.make(memoryOf(record, steps))
    }
  })

/** Rebuild what later nodes see from the durable step records. */
export const memoryOf = (record: RunRecord, steps: ReadonlyArray<StepRecord>): RunMemory => {
  const outputs: Record<string, unknown> = {}
  const results: Record<string, NodeResult> = {}
  const history: Array<VisitRecord> = []
  let finished = 0
  for (const step of steps) {
    if (step.outcome === null) continue
    finished++
    const result: NodeResult = {
      outcome: step.outcome,
      attemptId: step.attemptId,
      ...Option.match(step.output, { onNone: () => ({}), onSome: (output) => ({ output }) }),
      ...(step.error === null ? {} : { error: step.error })
    }
    results[step.nodeId] = result
    history.push({ nodeId: step.nodeId, ...result })
    if (step.outcome === "ok") outputs[step.nodeId] = Option.getOrNull(step.output)
  }
  return {
    visit: null,
    interruptions: record.interruptions,
    outstanding: record.abortPending ? record.abort : null,
    answered: null,
    outputs,
    results,
    history,
    finished,
    claimLostReported: false,
    claimGone: false,
    leaseUntil: record.claimExpiresAt ?? 0
  }
}

export interface Owner {
  readonly host: string
  readonly boot: string
  readonly pid: number
}

const bootId = (): string => {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
  } catch {
    // No boot id: the boot time to the minute stands in for it.
    return `t${Math.round((Date.now() / 1000 - uptime()) / 60)}`
  }
}

let self: Owner | undefined
/** This process. */
export const currentOwner = (): Owner => {
  self ??= { host: hostname(), boot: bootId(), pid: process.pid }
  return self
}

export const claimToken = (id: string, owner: Owner = currentOwner()): string =>
  `claim-${id}@${encodeURIComponent(owner.host)}/${encodeURIComponent(owner.boot)}/${owner.pid}`

/** The owner a token names, or null for tokens without one (older releases, other writers). */
export const ownerOf = (token: string): Owner | null => {
  const at = token.lastIndexOf("@")
  if (at < 0) return null
  const parts = token.slice(at + 1).split("/")
  if (parts.length !== 3) return null
  const [host, boot, pid] = parts
  if (host === undefined || boot === undefined || pid === undefined || !/^\d+$/.test(pid)) return null
  try {
    return { host: decodeURIComponent(host), boot: decodeURIComponent(boot), pid: Number(pid) }
  } catch {
    return null
  }
}

/** Is a process with this pid alive on this machine? (EPERM: alive, owned by someone else.) */
export const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return typeof error === "object" && error !== null && "code" in error && error.code === "EPERM"
  }
}

/**
 * True only when the token's owner is provably gone: same machine and boot, another pid, and
 * that pid does not exist. Pure given `alive`.
 */
export const ownerIsDead = (
  token: string,
  me: Owner = currentOwner(),
  alive: (pid: number) => boolean = pidAlive
): boolean => {
  const owner = ownerOf(token)
  if (owner === null) return false
  if (owner.host !== me.host || owner.boot !== me.boot || owner.pid === me.pid) return false
  return !alive(owner.pid)
}
