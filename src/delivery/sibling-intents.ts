/**
 * One successor turn per run, when one run owns several intents in one session (pure policy).
 *
 * A run can collect a second intent while its first is still pending: a claim loss and then the
 * agent's cancel under the new owner, or a step timeout whose recovery prompt went out without
 * its intent (the store was failing) and then the agent's cancel. Each interruption owns its
 * intent (spec 000), but the model gets one turn for the run, never two (spec 004):
 *
 * - an intent is **covered** when another intent of the same run and session was resolved at
 *   or after it was requested: that message reached the branch after this intent's event, so
 *   it is the turn this intent owed; it is resolved with that message's identity, not sent;
 * - an intent **waits** while a newer intent of the same run and session is pending: the newest
 *   event's message answers all of them (two deliverers never send for two siblings at once);
 * - a claim loss reported after a sibling was already made eligible (the run had ended under
 *   its new owner, whose end owns the run's terminal turn) is answered by that sibling: covered
 *   once it is resolved, waiting while it is pending.
 */
import type { TurnIntent } from "../domain/turn-intent.ts"

export type SiblingVerdict =
  | { readonly _tag: "Send" }
  | { readonly _tag: "Covered"; readonly by: TurnIntent }
  | { readonly _tag: "Wait"; readonly newer: TurnIntent }

const time = (iso: string): number => Date.parse(iso)

/** Requested later (ties broken by ID, so every process picks the same newest). */
const isNewer = (a: TurnIntent, b: TurnIntent): boolean => {
  const ta = time(a.requestedAt)
  const tb = time(b.requestedAt)
  return ta > tb || (ta === tb && a.intentId > b.intentId)
}

/** What to do with `intent`, given every intent of its run for its session (any state). */
export const siblingVerdict = (intent: TurnIntent, siblings: ReadonlyArray<TurnIntent>): SiblingVerdict => {
  const others = siblings.filter(
    (s) =>
      s.intentId !== intent.intentId &&
      s.runId === intent.runId &&
      s.targetSessionId === intent.targetSessionId
  )
  const requested = time(intent.requestedAt)
  const cover = others.find(
    (s) =>
      s.resolvedAt !== null &&
      s.resolution !== null &&
      s.resolutionMessageId !== null &&
      time(s.resolvedAt) >= requested
  )
  if (cover !== undefined) return { _tag: "Covered", by: cover }
  const ended =
    intent.cause === "claimLost"
      ? others.find((s) => s.eligibleAt !== null && time(s.eligibleAt) <= requested)
      : undefined
  if (ended !== undefined) {
    return ended.resolvedAt !== null && ended.resolution !== null && ended.resolutionMessageId !== null
      ? { _tag: "Covered", by: ended }
      : { _tag: "Wait", newer: ended }
  }
  // A late claim loss (requested once this intent was eligible) waits for this one, not vice versa.
  const lateClaimLoss = (s: TurnIntent) =>
    s.cause === "claimLost" && intent.eligibleAt !== null && time(s.requestedAt) >= time(intent.eligibleAt)
  const newer = others.find((s) => s.resolvedAt === null && isNewer(s, intent) && !lateClaimLoss(s))
  return newer === undefined ? { _tag: "Send" } : { _tag: "Wait", newer }
}
