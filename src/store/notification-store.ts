/**
 * NotificationStore: the `workflow_notifications` rows, passive `progress` and `final` reports
 * for the user's eyes. This module is the contract and the payload schema;
 * `notification-store-sql.ts` implements it. Nothing here starts a model turn or touches a
 * turn intent: a notification is only ever shown, never answered.
 */
import { Context, type Effect, type Option, Schema } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import type { StoreFailure } from "./store-errors.ts"

export const NOTIFICATION_SCHEMA = "pi-workflows.notification.v1"

/** Longest progress text, in UTF-8 bytes. */
export const MAX_PROGRESS_BYTES = 2_048

export const ProgressPayload = Schema.Struct({
  schema: Schema.Literal(NOTIFICATION_SCHEMA),
  kind: Schema.Literal("progress"),
  workflowName: Schema.String,
  text: Schema.String,
  nodeId: Schema.NullOr(Schema.String),
  attemptId: Schema.NullOr(Schema.String)
})
export type ProgressPayload = typeof ProgressPayload.Type

export const FinalPayload = Schema.Struct({
  schema: Schema.Literal(NOTIFICATION_SCHEMA),
  kind: Schema.Literal("final"),
  workflowName: Schema.String,
  state: Schema.Literal("completed", "failed", "timed_out", "cancelled"),
  summary: Schema.String
})
export type FinalPayload = typeof FinalPayload.Type

export const NotificationPayload = Schema.Union(ProgressPayload, FinalPayload)
export type NotificationPayload = typeof NotificationPayload.Type

export interface Notification {
  readonly notificationId: string
  readonly runId: string
  /** The session that owns the run: the only one it is ever shown to. */
  readonly targetSessionId: string
  readonly kind: NotificationPayload["kind"]
  readonly payload: NotificationPayload
  readonly createdAt: string
  /** When it was marked delivered (just before it was shown); null while pending. */
  readonly deliveredAt: string | null
}

export interface NewNotification {
  readonly notificationId: string
  readonly runId: string
  readonly targetSessionId: string
  readonly payload: NotificationPayload
}

export interface ListNotifications {
  readonly runId?: string
  readonly targetSessionId?: string
  readonly state?: "pending" | "delivered" | "all"
  /** 1–1,000. */
  readonly limit: number
}

export interface NotificationStoreService {
  /**
   * Store a notification with `created_at = now`. `false` when the ID exists already (the first
   * one wins; a run's `final` ID is derived from the run, so it is written once).
   */
  readonly insert: (input: NewNotification) => Effect.Effect<boolean, InvalidInput | StoreFailure>
  /** The newest notification of a run of that kind. */
  readonly latest: (
    runId: string,
    kind: NotificationPayload["kind"]
  ) => Effect.Effect<Option.Option<Notification>, StoreFailure>
  /**
   * Mark up to `limit` pending notifications of the session delivered, in one statement, and
   * return them oldest first. Marking comes before showing: a crash in between loses them
   * rather than showing them twice (at most once).
   */
  readonly takePending: (input: {
    readonly targetSessionId: string
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<Notification>, InvalidInput | StoreFailure>
  /** A bounded listing (for status views and the operator CLI), oldest first. */
  readonly list: (
    input: ListNotifications
  ) => Effect.Effect<ReadonlyArray<Notification>, InvalidInput | StoreFailure>
}

export class NotificationStore extends Context.Tag("pi-workflow-turns/NotificationStore")<
  NotificationStore,
  NotificationStoreService
>() {}
