/**
 * LaunchStore: launch data of runs started from a terminal turn or by `restart`
 * (`workflow_run_launches`). This module is the service contract; `store/launch-store-sqlite.ts`
 * implements it. `reserve` is the one write: inside one BEGIN IMMEDIATE transaction
 * it checks the terminal turn's reservation and the parent's restart, creates the run (the
 * caller's effect, whose own transaction becomes a savepoint) and records the launch. A repeated
 * tool call finds its own row and gets the existing run back; anything else that would be a
 * second launch is refused, and the transaction leaves nothing behind.
 */
import { Context, type Effect, type Option } from "effect"
import type { StoreFailure } from "../store/store-errors.ts"
import type { LaunchAlreadyReserved, RestartRefused, Launch, Lineage } from "./restart-policy.ts"

export type LaunchKind = Launch["kind"]

export interface LaunchRecord {
  readonly runId: string
  readonly kind: LaunchKind
  readonly parentRunId: string | null
  /** The terminal turn (its run) whose one launch this is, if made in one. */
  readonly terminalRunId: string | null
  readonly terminalIntentId: string | null
  readonly toolCallId: string | null
  readonly launch: Launch
  readonly createdAt: string
}

export interface ReserveLaunch {
  readonly kind: LaunchKind
  readonly lineage: Lineage | null
  readonly terminal: { readonly runId: string; readonly intentId: string | null } | null
  readonly toolCallId: string | null
}

export type Reserved =
  | { readonly _tag: "Created"; readonly runId: string }
  /** The same tool call already made this launch (a repeat after a crash or reload). */
  | { readonly _tag: "Existing"; readonly runId: string; readonly kind: LaunchKind }

export interface LaunchStoreService {
  readonly get: (runId: string) => Effect.Effect<Option.Option<LaunchRecord>, StoreFailure>
  /** The run that restarted `parentRunId`, if any. */
  readonly childOf: (parentRunId: string) => Effect.Effect<Option.Option<LaunchRecord>, StoreFailure>
  /** The launch the terminal turn of `terminalRunId` reserved, if any. */
  readonly byTerminal: (terminalRunId: string) => Effect.Effect<Option.Option<LaunchRecord>, StoreFailure>
  readonly reserve: <E, R>(
    input: ReserveLaunch,
    create: Effect.Effect<{ readonly runId: string }, E, R>
  ) => Effect.Effect<Reserved, E | LaunchAlreadyReserved | RestartRefused | StoreFailure, R>
}

export class LaunchStore extends Context.Tag("pi-workflow-turns/LaunchStore")<
  LaunchStore,
  LaunchStoreService
>() {}
