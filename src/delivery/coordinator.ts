/**
 * Coordinator: the only path through which workflow prompts, result presentations and
 * fallbacks reach the Pi session. Natural messages resolve a pending intent of their run when
 * one exists; fallback sync resolves eligible intents that no natural message will.
 */
import { Context, type Effect } from "effect"
import type { StoreFailure } from "../domain/errors.ts"
import type { CustomMessage, DeliveryOptions, SendFailed } from "../session/pi-session.ts"

export type NaturalKind = "workflowPrompt" | "presentation"

export interface NaturalMessage {
  readonly kind: NaturalKind
  readonly runId: string
  readonly message: CustomMessage
  readonly options: DeliveryOptions
}

export interface NaturalReceipt {
  /** The intent this message resolved, or null when none was pending (or another path won). */
  readonly turnIntentId: string | null
  /** False when an identical message was already in the branch (repair, no second send). */
  readonly sent: boolean
}

export type SyncTrigger = "settled" | "sessionStart" | "periodic"

export interface SyncReport {
  readonly delivered: ReadonlyArray<string>
  readonly repaired: ReadonlyArray<string>
  /** Why the pass sent nothing (shutdown, user hold, busy, pending abort), if it skipped. */
  readonly skipped: string | null
}

export interface CoordinatorService {
  readonly deliverNatural: (
    message: NaturalMessage
  ) => Effect.Effect<NaturalReceipt, SendFailed | StoreFailure>
  readonly syncFallbacks: (trigger: SyncTrigger) => Effect.Effect<SyncReport, StoreFailure>
}

export class Coordinator extends Context.Tag("pi-workflow-turns/Coordinator")<
  Coordinator,
  CoordinatorService
>() {}
