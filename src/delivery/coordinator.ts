/**
 * Coordinator: the only path through which workflow prompts, result presentations and
 * fallbacks reach the Pi session. Natural messages resolve a pending intent of their run when
 * one exists; fallback sync resolves eligible intents that no natural message will.
 * The live implementation is `layer` in `coordinator-live.ts` (see docs/delivery.md).
 *
 * Also the two optional ports the live coordinator takes from its layer's context when it is
 * built: `FallbackComposer` (the fallback message) and the test-only `CrashPoints`.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import type { CustomMessage, DeliveryOptions, SendFailed } from "../session/pi-session.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { CRASH_AT_ENV } from "./unanswered-successor.ts"

export type NaturalKind = "workflowPrompt" | "presentation"

export interface NaturalMessage {
  readonly kind: NaturalKind
  readonly runId: string
  readonly message: CustomMessage
  readonly options: DeliveryOptions
  /**
   * The one intent this message answers (a completed run's terminal turn intent). It is then
   * sent only through that intent, never plain: when another message (a fallback) resolved it
   * first, or it cannot be stored or claimed, nothing is sent and the receipt says so.
   */
  readonly turnIntentId?: string
  /**
   * A workflow prompt's runner: the intent of the abort this prompt answers (its outstanding
   * interruption). When no pending intent can be claimed because the intent store cannot be
   * read, the prompt still carries this identity, so the branch records the answer and branch
   * repair resolves the intent as answered whenever it is stored or claimed later.
   */
  readonly answers?: string
  /**
   * Never a second copy: not sent when the branch already holds a message of the same custom type
   * whose `details.requestId` is this message's (a waiting presentation sent again after a restart).
   */
  readonly once?: true
  /**
   * Asked right before each send (after every wait for idle or a claim): false withdraws the
   * message, and nothing is sent. A waiting presentation whose question was answered meanwhile
   * (by the user, or its deadline) is stale; the next step's prompt answers the intent instead.
   */
  readonly stillWanted?: Effect.Effect<boolean>
}

export interface NaturalReceipt {
  /** The intent this message resolved, or null when none was pending (or another path won). */
  readonly turnIntentId: string | null
  /**
   * False when this same message was already in the branch (repair, no second send), or, for a
   * message bound to its intent, when another message answered it (then `turnIntentId` is null).
   */
  readonly sent: boolean
  /**
   * Set when delivery worked but the successor-turn bookkeeping degraded: the store could not
   * be read (message sent unchanged), the resolution could not be stored (branch repair will
   * record it), or another claimant held the intent past the wait bound.
   */
  readonly note: string | null
}

export type SyncTrigger = "settled" | "sessionStart" | "periodic"

export interface SyncReport {
  /**
   * Intents whose fallback this pass sent (at most one per pass). Each is resolved as soon as
   * the branch shows the message: at once when Pi wrote it during the send, else by a later pass.
   */
  readonly delivered: ReadonlyArray<string>
  /** Intents resolved from a message already in the branch (sent earlier, by anyone), without sending. */
  readonly repaired: ReadonlyArray<string>
  /** Intents whose fallback send failed; their claim was released for a later pass. */
  readonly failed: ReadonlyArray<string>
  /** Why the pass sent nothing (shuttingDown, userHold, busy, abortInFlight), if it skipped. */
  readonly skipped: string | null
}

export interface CoordinatorService {
  /** Send a workflow prompt or result presentation; it is never silently dropped. */
  readonly deliverNatural: (
    message: NaturalMessage
  ) => Effect.Effect<NaturalReceipt, SendFailed | InvalidInput>
  /** One fallback synchronization pass for the current session. */
  readonly syncFallbacks: (trigger: SyncTrigger) => Effect.Effect<SyncReport, StoreFailure | InvalidInput>
  /** For the adapter's `agent_settled` handler: clear abort bookkeeping, then sync. */
  readonly onSettled: Effect.Effect<SyncReport, StoreFailure | InvalidInput>
  /** For the adapter's `session_start` handler. */
  readonly onSessionStart: Effect.Effect<SyncReport, StoreFailure | InvalidInput>
}

export class Coordinator extends Context.Tag("pi-workflow-turns/Coordinator")<
  Coordinator,
  CoordinatorService
>() {}

// FallbackComposer: an optional port that composes the fallback message for an intent. Without
// it the coordinator sends the factual fallback of `fallback.ts`; the application provides one
// that adds the terminal decision for runs that have ended (src/terminal/terminal-decision.ts).
// A composer must be deterministic per intent and must never fail: it returns the plain
// fallback instead.

export interface FallbackComposerService {
  readonly compose: (intent: TurnIntent) => Effect.Effect<CustomMessage>
}

export class FallbackComposer extends Context.Tag("pi-workflow-turns/FallbackComposer")<
  FallbackComposer,
  FallbackComposerService
>() {}

// Crash points: a test-only hook that lets the crash-recovery tests kill Pi (SIGKILL) at an
// exact step of a delivery, then restart it on the same session file. The coordinator takes the
// service from its layer's context when it is built and calls `reached(point, intentId)` after it
// claimed an intent, after it sent the resolving message and after it stored the resolution.
// Without a `CrashPoints` service (the normal case), or without `PI_WORKFLOW_TURNS_CRASH_AT` in
// the environment, nothing happens.
//
// `PI_WORKFLOW_TURNS_CRASH_AT=afterClaim|afterSend|afterResolve` is for tests only
// (docs/reliability.md): the process kills itself the first time it reaches that point. Two
// more values, `beforeSuccessorRequest` and `afterSuccessorRequest`, are reached around a model
// request for a terminal successor instead (`extension/successor-request.ts`).

export type CrashPoint = "afterClaim" | "afterSend" | "afterResolve"

export const CRASH_POINTS: ReadonlyArray<CrashPoint> = ["afterClaim", "afterSend", "afterResolve"]

export interface CrashPointsService {
  /** Called when a delivery reaches `point` for `intentId`. */
  readonly reached: (point: CrashPoint, intentId: string) => Effect.Effect<void>
}

export class CrashPoints extends Context.Tag("pi-workflow-turns/CrashPoints")<
  CrashPoints,
  CrashPointsService
>() {}

export const noopCrashPoints: CrashPointsService = { reached: () => Effect.void }

/** SIGKILL this process at the point the variable names; the no-op when it is unset or unknown. */
export const crashPointsFromEnv = (env: Readonly<Record<string, string | undefined>>): CrashPointsService => {
  const target = CRASH_POINTS.find((point) => point === env[CRASH_AT_ENV])
  if (target === undefined) return noopCrashPoints
  return {
    reached: (point) =>
      point === target
        ? Effect.sync(() => {
            process.kill(process.pid, "SIGKILL")
          })
        : Effect.void
  }
}

export const layerNoCrashPoints: Layer.Layer<CrashPoints> = Layer.succeed(CrashPoints, noopCrashPoints)

export const layerCrashPointsFromEnv: Layer.Layer<CrashPoints> = Layer.sync(CrashPoints, () =>
  crashPointsFromEnv(process.env)
)

/** What delivery code calls: the service in context, if any, reaches the point. */
export const reachCrashPoint = (point: CrashPoint, intentId: string): Effect.Effect<void> =>
  Effect.flatMap(
    Effect.serviceOption(CrashPoints),
    Option.match({ onNone: () => Effect.void, onSome: (crash) => crash.reached(point, intentId) })
  )
