/**
 * The timing and retry policies of the service graph as values a program can replace: provide
 * `TimingPolicy` (a `Context.Reference`, so leaving it out keeps today's defaults) with your own
 * `Duration`s and `Schedule`s. It is the one way to set these timings: no layer option overrides it.
 *
 * The lease bound of docs/protocol.md still holds: a delivery lease must exceed the write-delay
 * bound, or the coordinator refuses to start.
 */
import { Context, Duration, Schedule } from "effect"

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
  /**
   * How often the live status line of interactive Pi redraws from what it last read (default
   * 1 s); null: no status line. It also rereads its run after each write of the engine's run
   * store and at least every `statusLineRefresh` (default 5 s).
   */
  readonly statusLineTick: Duration.Duration | null
  readonly statusLineRefresh: Duration.Duration
  /** Claim lease of one delivery (default 30 s); it must exceed the write-delay bound (5 s). */
  readonly deliveryLease: Duration.Duration
  /**
   * Delay between a natural delivery's claim attempts while another claimant holds the intent
   * (default 500 ms); it stops trying one lease (plus one delay) after the first refusal.
   */
  readonly claimRetry: Duration.Duration
  /** Longest an abort waits for its intent to be stored (default 250 ms). */
  readonly abortPersistTimeout: Duration.Duration
  /**
   * PostgreSQL: the longest one statement may run on the server (`statement_timeout` of every
   * pool session); the server then cancels it and the call fails with `StoreFailure`. The client
   * stops waiting for an answer `pgClientMargin(…)` later (`query_timeout`), so a statement on a
   * stalled connection is bounded too. null (default): `pgDefaultTimeout(lock budget)`, twice
   * the connection's lock budget (`busyTimeoutMs`) and at least 10 s. A value must exceed the
   * lock budget (a lock wait ends as a lock timeout first, retried as such); otherwise opening
   * the database fails.
   */
  readonly pgStatementTimeout: Duration.Duration | null
  /**
   * PostgreSQL: the longest a session may sit idle inside an open transaction
   * (`idle_in_transaction_session_timeout`); the server then ends the session, rolling the
   * transaction back and releasing its locks (a stopped or frozen process cannot hold other
   * writers past it). null (default): `pgDefaultTimeout(lock budget)`, as for statements.
   */
  readonly pgIdleInTransactionTimeout: Duration.Duration | null
}

/**
 * How long a delivery claim lives without renewal (the default `deliveryLease`); it must
 * exceed the write-delay bound of docs/protocol.md (`delivery/protocol.ts`).
 */
export const DEFAULT_LEASE_MS = 30_000

/** The stores' default lock budget (`busyTimeoutMs`): how long a statement waits for a lock. */
export const DEFAULT_LOCK_BUDGET_MS = 5_000

/** The floor of the derived PostgreSQL timeouts: no store statement comes near it. */
const PG_TIMEOUT_FLOOR_MS = 10_000

/** The PostgreSQL timeouts a null policy field means: twice the lock budget, at least 10 s. */
export const pgDefaultTimeout = (lockBudgetMs: number): number =>
  Math.max(PG_TIMEOUT_FLOOR_MS, 2 * lockBudgetMs)

/**
 * How much longer than the server's statement timeout the client waits for an answer: long
 * enough for the server's own cancellation to arrive first on a healthy connection (the session
 * stays usable), at most 1 s.
 */
export const pgClientMargin = (statementTimeoutMs: number): number => Math.min(1_000, statementTimeoutMs)

export const DEFAULT_TIMING_POLICY: TimingPolicyService = {
  storeRetry: Schedule.intersect(Schedule.exponential(Duration.millis(100)), Schedule.recurs(4)),
  settleRetry: Schedule.either(
    Schedule.exponential(Duration.millis(100)),
    Schedule.spaced(Duration.seconds(1))
  ),
  syncInterval: Duration.seconds(10),
  maintenanceInterval: Duration.seconds(5),
  statusLineTick: Duration.seconds(1),
  statusLineRefresh: Duration.seconds(5),
  deliveryLease: Duration.millis(DEFAULT_LEASE_MS),
  claimRetry: Duration.millis(500),
  abortPersistTimeout: Duration.millis(250),
  pgStatementTimeout: null,
  pgIdleInTransactionTimeout: null
}

export class TimingPolicy extends Context.Reference<TimingPolicy>()("pi-workflow-turns/TimingPolicy", {
  defaultValue: () => DEFAULT_TIMING_POLICY
}) {}

/** A policy duration as whole milliseconds (the unit the stores use). */
export const toMillis = (duration: Duration.Duration): number =>
  Math.max(0, Math.round(Duration.toMillis(duration)))
