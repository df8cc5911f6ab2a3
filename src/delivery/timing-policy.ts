/**
 * The timing and retry policies of the service graph as values a program can replace: provide
 * `TimingPolicy` (a `Context.Reference`, so leaving it out keeps today's defaults) with your own
 * `Duration`s and `Schedule`s. A number given in a layer's options (`syncIntervalMs`, `leaseMs`,
 * `persistTimeoutMs`, `maintenanceIntervalMs`) still wins over the policy, as before.
 *
 * The lease bound of docs/protocol.md still holds: a delivery lease must exceed the write-delay
 * bound, or the coordinator refuses to start.
 */
import { Context, Duration, Schedule } from "effect"
import { DEFAULT_LEASE_MS } from "./protocol.ts"

export interface TimingPolicyService {
  /**
   * How the runner retries a fenced write that found another process's write lock after the
   * busy budget (default: exponential from 100 ms, 4 retries). Only lock failures are retried.
   */
  readonly storeRetry: Schedule.Schedule<unknown, unknown>
  /**
   * How the runner retries writing an outcome it already acted on (a run's end after an abort or
   * a timeout, a move to the next step, a park) while the store fails in any way (default:
   * exponential from 100 ms, at most 1 s apart). The engine ends the retry when the run stops
   * being this process's: a lost claim, the runner's lease running out, or the engine closing.
   */
  readonly settleRetry: Schedule.Schedule<unknown, unknown>
  /** Spacing of the coordinator's periodic fallback pass (default 10 s); null: no periodic pass. */
  readonly syncInterval: Duration.Duration | null
  /** Spacing of the periodic reconciliation pass (default 5 s); null: none. */
  readonly maintenanceInterval: Duration.Duration | null
  /** Claim lease of one delivery (default 30 s); it must exceed the write-delay bound (5 s). */
  readonly deliveryLease: Duration.Duration
  /** Longest an abort waits for its intent to be stored (default 250 ms). */
  readonly abortPersistTimeout: Duration.Duration
}

export const DEFAULT_TIMING_POLICY: TimingPolicyService = {
  storeRetry: Schedule.intersect(Schedule.exponential(Duration.millis(100)), Schedule.recurs(4)),
  settleRetry: Schedule.either(
    Schedule.exponential(Duration.millis(100)),
    Schedule.spaced(Duration.seconds(1))
  ),
  syncInterval: Duration.seconds(10),
  maintenanceInterval: Duration.seconds(5),
  deliveryLease: Duration.millis(DEFAULT_LEASE_MS),
  abortPersistTimeout: Duration.millis(250)
}

export class TimingPolicy extends Context.Reference<TimingPolicy>()("pi-workflow-turns/TimingPolicy", {
  defaultValue: () => DEFAULT_TIMING_POLICY
}) {}

/** A policy duration as whole milliseconds (the unit the stores and options use). */
export const toMillis = (duration: Duration.Duration): number =>
  Math.max(0, Math.round(Duration.toMillis(duration)))
