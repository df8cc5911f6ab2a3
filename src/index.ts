/**
 * pi-workflow-turns as a library: one namespace per concept, exactly what docs/library.md
 * teaches. The Pi extension is the `./extension` entry; test kits (the fake Pi session, temp
 * stores, store faults) are in `./testing`. Helpers the modules share among themselves are
 * marked `@internal` and left out of the published declarations (tsconfig.build.json).
 */

// Typed errors: the domain's and the stores'
export * as Errors from "./errors.ts"

// Domain (pure); EventPolicy holds the source events and the policy over them
export * as EventPolicy from "./domain/event-policy.ts"
export * as Facts from "./domain/facts.ts"
export * as Identity from "./domain/identity.ts"
export * as TurnIntent from "./domain/turn-intent.ts"

// Stores
export * as Database from "./store/database.ts"
export * as LaunchStore from "./store/launch-store.ts"
export * as LaunchStoreSql from "./store/launch-store-sql.ts"
export * as NotificationStore from "./store/notification-store.ts"
export * as NotificationStoreSql from "./store/notification-store-sql.ts"
export * as RunStore from "./store/run-store.ts"
export * as RunStoreSql from "./store/run-store-sql.ts"
export * as TurnIntentStore from "./store/turn-intent-store.ts"
export * as TurnIntentStoreSql from "./store/turn-intent-store-sql.ts"

// Successor-turn core
export * as AbortBookkeeping from "./interruption/abort-bookkeeping.ts"
export * as Coordinator from "./delivery/coordinator.ts"
// The live Coordinator and the core in one layer (`Core.layer`)
export * as Core from "./delivery/coordinator-live.ts"
export * as Fallback from "./delivery/fallback.ts"
export * as Interruptions from "./interruption/interruptions.ts"
export * as PiSession from "./session/pi-session.ts"
export * as SourceEvents from "./interruption/source-events.ts"
export * as TimingPolicy from "./domain/timing-policy.ts"

// Passive notifications (progress, final)
export * as Notifications from "./notifications/notifications.ts"
export * as Notifier from "./notifications/notifier.ts"

// Workflow engine
export { defineWorkflow } from "./engine/definition.ts"
export type {
  AgentNode,
  ComputeNode,
  Edge,
  Outcome,
  StepContext,
  TimeoutMs,
  WaitNode,
  WorkflowDefinition,
  WorkflowNode
} from "./engine/definition.ts"
export * as Engine from "./engine/engine.ts"
export * as EngineLive from "./engine/engine-live.ts"
export * as EngineErrors from "./engine/errors.ts"
export * as WorkflowRegistry from "./engine/registry.ts"

// The composed application
export * as App from "./app/layers.ts"
