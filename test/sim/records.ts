/**
 * What the simulated world records for the invariants: every send with the lifecycle at that
 * moment, every publish and its outcome, every natural delivery and how it ended.
 */
import type { SourceEvent } from "../../src/domain/event-policy.ts"
import type { PublishResult } from "../../src/interruption/source-events.ts"
import type { ProcId } from "./schedule.ts"

export interface SendLog {
  readonly proc: ProcId
  readonly customType: string
  readonly content: string
  readonly turnIntentId: string | null
  readonly shuttingDown: boolean
  readonly userHold: boolean
  readonly phase: string
  /** False when the fake lost it (sent into an aborting turn). */
  readonly delivered: boolean
  readonly step: number
}

export interface PublishLog {
  readonly proc: ProcId
  readonly generation: number
  readonly step: number
  readonly event: SourceEvent
  /** The intent the policy asks for (null: none), and whether it should end up eligible. */
  readonly expectedIntent: string | null
  readonly eligible: boolean
  readonly startedAt: number
  result: PublishResult | null
  /** The publish fiber was stopped by a crash of its process. */
  interrupted: boolean
  abortedAt: number | null
}

export interface NaturalLog {
  readonly proc: ProcId
  readonly generation: number
  readonly step: number
  readonly runId: string
  readonly content: string
  outcome: "pending" | "sent" | "failed" | "interrupted"
  startedUnderHold: boolean
}

/** A message the coordinator sent that died with its process before Pi wrote it. */
export interface LostMessage {
  readonly turnIntentId: string | null
  readonly content: string
}
