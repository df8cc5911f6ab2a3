/**
 * Engine: starts, activates, resumes and controls workflow runs. `start` reserves a queue row
 * and returns at once; `activate` (after `agent_settled`) claims it and runs it in a fiber.
 * Everything the successor-turn core must know goes out through `SourceEvents`; every prompt
 * and presentation goes through the `Coordinator`. This module is the service contract;
 * `engine-live.ts` implements it.
 */
import { Context, type Effect, type Option } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import type { OpenStep } from "../domain/step-reminder.ts"
import type { ForeignRun } from "../domain/identity.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { RunOrigin } from "../domain/event-policy.ts"
import type { ClaimLost, ReservationConflict, RunNotFound, SubmitReceipt } from "../store/run-store.ts"
import type { AdoptionFacts } from "../store/run-events.ts"
import type { AnswerInput } from "./checkpoint.ts"
import type {
  AnswerRejected,
  InvalidRunState,
  InvalidWorkflowInput,
  RunBusy,
  RunLiveElsewhere,
  SourceChanged,
  SubmitRejected,
  WorkflowNotFound
} from "./errors.ts"
import type { RunStatus, RunSummary } from "./messages.ts"
import type { SubmitInput } from "./visit.ts"

export type { RunStatus, RunSummary, StepView } from "./messages.ts"
export type { SubmitInput } from "./visit.ts"
export type { AnswerInput } from "./checkpoint.ts"

export interface EngineConfig {
  /** Limit of nodes that omit `timeoutMs` (default 15 minutes). */
  readonly defaultTimeoutMs?: number
  /** Claim lease length (default 60 s). */
  readonly leaseMs?: number
  /** Lease renewal interval (default 20 s); keep it well below `leaseMs`. */
  readonly renewEveryMs?: number
}

export interface StartInput {
  readonly workflow: string
  readonly input: unknown
  /** The origin Pi session: it receives the prompts and owns any successor turn. */
  readonly sessionId: string
  readonly origin: RunOrigin
}

export interface RecoverReport {
  readonly resumed: ReadonlyArray<RunSummary>
  readonly refused: ReadonlyArray<{ readonly runId: string; readonly reason: string }>
}

type ControlError = RunNotFound | InvalidRunState | StoreFailure

/** What `adopt` did: the run as it is now, and the adoption's facts (null: it was the session's already). */
export interface Adopted {
  readonly run: RunSummary
  readonly adoption: AdoptionFacts | null
}

export interface EngineService {
  /** Validate and reserve a run (one queued/active run per session); it starts on `activate`. */
  readonly start: (
    input: StartInput
  ) => Effect.Effect<
    RunSummary,
    WorkflowNotFound | InvalidWorkflowInput | InvalidInput | ReservationConflict | StoreFailure
  >
  /** Claim and start the session's queued run, if any. A launch failure ends it `failed`. */
  readonly activate: (sessionId: string) => Effect.Effect<Option.Option<RunSummary>, StoreFailure>
  readonly submit: (
    input: SubmitInput
  ) => Effect.Effect<SubmitReceipt, SubmitRejected | ForeignRun | ClaimLost | StoreFailure>
  /**
   * The first answer to a waiting checkpoint (the model's `workflow answer`, the user's
   * `/workflow answer`): the wait node's output becomes `{answer}` and the run goes on here.
   */
  readonly answer: (
    input: AnswerInput
  ) => Effect.Effect<SubmitReceipt, AnswerRejected | ForeignRun | StoreFailure>
  /** `agent`: the `workflow` tool; `user`: `/workflow cancel`. */
  readonly cancel: (
    runId: string,
    options: { readonly by: "agent" | "user" }
  ) => Effect.Effect<RunSummary, ControlError>
  /** Hold at the next step boundary (`waiting`) until `resume`. */
  readonly pause: (runId: string) => Effect.Effect<RunSummary, ControlError>
  /** Stop without a terminal state; `resume` reruns the node in flight. Runs here only. */
  readonly park: (runId: string, reason: string) => Effect.Effect<RunSummary, ControlError>
  /** An operator stops the active agent turn; the run is then parked (handoff) or failed. */
  readonly interrupt: (
    runId: string,
    options: { readonly reason: string; readonly afterwards: "park" | "fail" }
  ) => Effect.Effect<RunSummary, ControlError>
  /** Take over a waiting, parked or lease-expired run (claim transfer). */
  readonly resume: (
    runId: string
  ) => Effect.Effect<RunSummary, ControlError | RunBusy | SourceChanged | WorkflowNotFound>
  /**
   * The user's `/workflow resume` of another session's run: take it over for `sessionId` when no
   * live process holds it (its owner quit, was killed or switched sessions). The run's target
   * session becomes `sessionId` in the claim's transaction (its pending turn intents and
   * notifications follow, an `adopted` event records it; `RunStore.adopt`) and the node in flight
   * reruns here. Refused with `RunLiveElsewhere` while a live process holds it, with
   * `ReservationConflict` while the session has another active run. A run that is already
   * `sessionId`'s is resumed as `resume` does.
   */
  readonly adopt: (
    runId: string,
    sessionId: string
  ) => Effect.Effect<
    Adopted,
    ControlError | RunBusy | RunLiveElsewhere | ReservationConflict | SourceChanged | WorkflowNotFound
  >
  /**
   * Resume every parked or lease-expired (not waiting) run of the session, and every run whose
   * claim names an owner process on this machine that no longer exists.
   */
  readonly recover: (sessionId: string) => Effect.Effect<RecoverReport, StoreFailure>
  readonly status: (runId: string) => Effect.Effect<RunStatus, RunNotFound | StoreFailure>
  /** The session's queued, running or waiting run (at most one), for tool calls without a run ID. */
  readonly active: (sessionId: string) => Effect.Effect<Option.Option<RunSummary>, StoreFailure>
  /**
   * The agent step this process's runner for the session awaits a `submit` for, once its
   * prompt went out (memory only: step reminders and the status line read it).
   */
  readonly openStep: (sessionId: string) => Effect.Effect<Option.Option<OpenStep>>
  /** The session's runs, newest first. */
  readonly list: (
    sessionId: string,
    options?: { readonly limit?: number }
  ) => Effect.Effect<ReadonlyArray<RunSummary>, StoreFailure>
  /** Wait until this process's runner for the run stops (at once when none runs here). */
  readonly await: (runId: string) => Effect.Effect<RunSummary, RunNotFound | StoreFailure>
  /** Park every run executing here (session shutdown): `Quiet{shutdown}` per run. */
  readonly shutdown: Effect.Effect<void>
}

export class Engine extends Context.Tag("pi-workflow-turns/Engine")<Engine, EngineService>() {}
