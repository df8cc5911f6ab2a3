/**
 * Test harness for the successor-turn core: a real SQLite store on a temp file (optionally
 * wrapped with scripted faults), the fake Pi session and the core layer, built in the test's
 * scope. Several harnesses can share one database file (two processes, two coordinators).
 */
import { Context, Effect, Layer } from "effect"
import type { Provenance, RunRef, SourceEvent, TerminalState } from "../../src/domain/event-policy.ts"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import type { CoordinatorOptions } from "../../src/delivery/coordinator-live.ts"
import type { TimingPolicyService } from "../../src/domain/timing-policy.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { AbortBookkeeping } from "../../src/interruption/abort-bookkeeping.ts"
import type { InterruptionsOptions } from "../../src/interruption/interruptions.ts"
import { SourceEvents } from "../../src/interruption/source-events.ts"
import { type FakeOptions, layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import { PiSession } from "../../src/session/pi-session.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../../src/store/turn-intent-store-sql.ts"
import * as StoreFaults from "../../src/testing/store-faults.ts"
import type { StoreFaultsControl, StoreOperation } from "../../src/testing/store-faults.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"
import { withTimings } from "../support/timing.ts"

/** `fail`: every call fails; `hang`: every call never answers; a number: fail that many calls. */
export type Fault = "fail" | "hang" | number
export type Faults = Partial<Record<StoreOperation, Fault>>

/** Script the shared fault wrapper (src/testing/store-faults.ts) from the harness's short form. */
const applyFaults = (control: StoreFaultsControl, next: Faults) =>
  Effect.zipRight(
    control.clear(),
    Effect.forEach(Object.entries(next) as ReadonlyArray<[StoreOperation, Fault]>, ([operation, fault]) =>
      fault === "hang"
        ? control.inject(operation, { _tag: "Hang" })
        : fault === "fail"
          ? control.inject(operation, { _tag: "Busy" })
          : fault > 0
            ? control.inject(operation, { _tag: "Busy" }, { times: fault })
            : Effect.void
    )
  )

export interface HarnessOptions {
  /** Share an existing database file (another process); default a fresh temp file. */
  readonly path?: string
  readonly session?: FakeOptions
  /** Reuse another harness's Pi session (an extension restart inside the same Pi session). */
  readonly sessionOf?: { readonly sessionContext: Context.Context<PiSession | PiSessionFake> }
  readonly coordinator?: CoordinatorOptions
  readonly interruptions?: InterruptionsOptions
  /** Timing policy fields over the defaults; the periodic fallback pass is off unless given. */
  readonly timings?: Partial<TimingPolicyService>
}

export const makeHarness = (options: HarnessOptions = {}) =>
  Effect.gen(function* () {
    const path = options.path ?? (yield* freshLocation)
    const storeContext = yield* Layer.build(
      TurnIntentStoreSql.layer.pipe(Layer.provideMerge(databaseLayerAt(path)))
    )
    const { store, control: faults } = yield* StoreFaults.make(Context.get(storeContext, TurnIntentStore))
    const sessionContext =
      options.sessionOf?.sessionContext ??
      (yield* Layer.build(layerFake({ sessionId: "session-1", ...options.session })))
    const core = yield* Layer.build(
      Core.layer({
        ...(options.coordinator === undefined ? {} : { coordinator: options.coordinator }),
        ...(options.interruptions === undefined ? {} : { interruptions: options.interruptions })
      }).pipe(
        Layer.provide(withTimings({ syncInterval: null, ...options.timings })),
        Layer.provide(Layer.succeed(TurnIntentStore, store)),
        Layer.provide(Layer.succeedContext(sessionContext))
      )
    )
    const fake = Context.get(sessionContext, PiSessionFake)
    const coordinator = Context.get(core, Coordinator)
    return {
      path,
      sessionContext,
      /** The real store (no faults): assertions read through it. */
      store: Context.get(storeContext, TurnIntentStore),
      setFaults: (next: Faults) => applyFaults(faults, next),
      session: Context.get(sessionContext, PiSession),
      fake,
      coordinator,
      events: Context.get(core, SourceEvents),
      bookkeeping: Context.get(core, AbortBookkeeping),
      /** What the Pi adapter does on `agent_settled`: release waiters, then the core's handler. */
      settle: (aborted = false) =>
        Effect.gen(function* () {
          yield* fake.settle({ aborted })
          // Let fibers woken by the settle run before the settle handler, as Pi's event loop would.
          yield* Effect.yieldNow()
          return yield* coordinator.onSettled
        }),
      /** Custom messages of a type sent so far. */
      sentOfType: (customType: string) =>
        Effect.map(fake.sent, (sent) => sent.filter((r) => r.message.customType === customType)),
      /** Every intent in the database (any session), oldest first. */
      intents: Context.get(storeContext, TurnIntentStore).list({ limit: 1000 })
    }
  })

export type Harness = Effect.Effect.Success<ReturnType<typeof makeHarness>>

// ---- sample data ---------------------------------------------------------------------------

export const run = (overrides: Partial<RunRef> = {}): RunRef => ({
  runId: "run-1",
  workflowRef: "autoimplement@1",
  workflowName: "autoimplement",
  targetSessionId: "session-1",
  origin: "tool",
  ...overrides
})

export const provenance = (
  cause: Provenance["cause"],
  overrides: Partial<Omit<Provenance, "cause">> = {}
): Provenance => ({ cause, nodeId: "implement", attemptId: "attempt-1", interruption: 0, ...overrides })

type ActiveCause = Extract<SourceEvent, { _tag: "ActiveTurnInterrupted" }>["provenance"]["cause"]

export const interrupted = (
  cause: ActiveCause,
  overrides: { readonly run?: RunRef; readonly interruption?: number; readonly reason?: string | null } = {}
): SourceEvent => ({
  _tag: "ActiveTurnInterrupted",
  run: overrides.run ?? run(),
  provenance: { ...provenance(cause, { interruption: overrides.interruption ?? 0 }), cause },
  reason: overrides.reason ?? null
})

export const terminal = (
  state: TerminalState,
  prov: Provenance | null,
  overrides: { readonly run?: RunRef; readonly reason?: string | null } = {}
): SourceEvent => ({
  _tag: "RunTerminal",
  run: overrides.run ?? run(),
  state,
  nodeId: prov?.nodeId ?? "implement",
  attemptId: prov?.attemptId ?? "attempt-1",
  reason: overrides.reason ?? `run ${state}`,
  provenance: prov,
  interruption: prov?.interruption ?? 0
})

export const prompt = (text: string, runId = "run-1") => ({
  kind: "workflowPrompt" as const,
  runId,
  message: { customType: "pi-workflows-prompt", content: text, display: true, details: { runId } },
  options: { deliverAs: "followUp" as const, triggerTurn: true }
})

export const presentation = (text: string, runId = "run-1") => ({
  kind: "presentation" as const,
  runId,
  message: { customType: "pi-workflows-result", content: text, display: true, details: { runId } },
  options: { deliverAs: "followUp" as const, triggerTurn: true }
})

export const FALLBACK = "pi-workflows-deferred-turn"
