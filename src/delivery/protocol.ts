/**
 * The timing conditions the delivery protocol rests on (docs/protocol.md). Each one, removed,
 * lets two coordinators both send a message for one intent; the model check
 * (`npm run check:model`, model/delivery.pml) proves the protocol under them and derives its
 * constants from the values here.
 */

/** How long a delivery claim lives without renewal (the coordinator's default `leaseMs`). */
export const DEFAULT_LEASE_MS = 30_000

/**
 * Condition 1, the write-delay bound: after `send` returns, Pi writes the message into the
 * branch, or definitely loses it, within this time while the session is idle. Pi defers a send
 * from an `agent_settled` handler until the handlers return and appends it when the turn it
 * starts begins (a turn that starts keeps the session busy, and a busy session never counts a
 * message as lost). A sent message not in the branch after this long on an idle session is lost,
 * and its claim is released so it can be sent again. The lease must outlast it.
 */
export const WRITE_DELAY_BOUND_MS = 5_000

/**
 * Condition 2: no lease time passes between the last successful claim or renewal and the send.
 * Every send is preceded directly by `TurnIntentStore.renew` of its claim; natural delivery waits
 * for idle between its branch check and its send, so it must renew after that wait.
 */
export const RENEW_BEFORE_SEND = true

/**
 * Condition 3: nothing slow runs in the settle handler after a send (Pi writes the message only
 * once the handler returns). A fallback pass that claimed several intents releases the others
 * before it sends, and after the send it only looks at the branch and remembers the message.
 */
export const RELEASE_OTHERS_BEFORE_SEND = true

/**
 * Rule 4: natural delivery sends only while no `agent_settled` handler of this process runs. Pi
 * reports the session idle while its settle handlers run but holds every turn-triggering send
 * made meanwhile until they return, so a slow store call in our settle pass would hold the
 * message past the bound (or the lease) and the intent would be sent again. Natural delivery
 * waits for `PiSession.settleDone` before it renews and sends, and its gate refuses while a
 * handler runs (`PiSession.settling`, set by the extension entry before its first await).
 */
export const NATURAL_OUTSIDE_SETTLE_HANDLER = true

/** True when a lease outlasts the write-delay bound (condition 1); the coordinator refuses others. */
export const leaseCoversWriteDelay = (leaseMs: number, writeDelayBoundMs: number): boolean =>
  Number.isSafeInteger(leaseMs) &&
  Number.isSafeInteger(writeDelayBoundMs) &&
  writeDelayBoundMs > 0 &&
  leaseMs > writeDelayBoundMs

/**
 * The model's time unit and constants (scripts/check-model.ts writes them into
 * model/constants.pml). The tick is the coarsest one that keeps condition 1 strict after
 * rounding against the protocol: the model's lease is the whole ticks a lease surely lasts
 * (rounded down), its write delay the ticks Pi may take (rounded up). A coarse tick keeps the
 * state space small; rounding this way never makes the model's lease longer or Pi faster.
 */
export const modelConstants = (
  leaseMs: number = DEFAULT_LEASE_MS,
  writeDelayBoundMs: number = WRITE_DELAY_BOUND_MS
): { readonly tickMs: number; readonly lease: number; readonly writeDelay: number } => {
  for (let tickMs = leaseMs; tickMs >= 1; tickMs--) {
    const lease = Math.floor(leaseMs / tickMs)
    const writeDelay = Math.ceil(writeDelayBoundMs / tickMs)
    if (lease > writeDelay) return { tickMs, lease, writeDelay }
  }
  return { tickMs: 1, lease: leaseMs, writeDelay: writeDelayBoundMs }
}
