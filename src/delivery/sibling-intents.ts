/**
 * One successor turn per run, when one run owns several intents in one session (pure policy).
 *
 * A run can collect a second intent while its first is still pending: a claim loss and then the
 * agent's cancel under the new owner, or a step timeout whose recovery prompt went out without
 * its intent (the store was failing) and then the agent's cancel. Each interruption owns its
 * intent (spec 000), but the model gets one turn for the run, never two (spec 004):
 *
 * - an intent is **covered** when a newer intent of the same run and session (requested later)
 *   is resolved: that message answers the later event, after this intent's, so it is the turn
 *   this intent owed; it is resolved with that message's identity, not sent;
 * - an intent **waits** while a newer intent of the same run and session is pending: the newest
 *   event's message answers all of them (two deliverers never send for two siblings at once);
 * - a claim loss reported after the run had ended under its new owner (a sibling was made
 *   eligible before it, or was answered by a presentation or fallback) is answered by that
 *   sibling, the run's terminal turn: covered once it is resolved, waiting while it is pending.
 */
import type { TurnIntent } from "../domain/turn-intent.ts"

export type SiblingVerdict =
  | { readonly _tag: "Send" }
  | { readonly _tag: "Covered"; readonly by: TurnIntent }
  | { readonly _tag: "Wait"; readonly newer: TurnIntent }

const time = (iso: string): number => Date.parse(iso)

/** Requested strictly later. */
const isNewer = (a: TurnIntent, b: TurnIntent): boolean => time(a.requestedAt) > time(b.requestedAt)

const isTied = (a: TurnIntent, b: TurnIntent): boolean => time(a.requestedAt) === time(b.requestedAt)

/** A message only an ended run gets: it answers every intent of the run requested with it. */
const isTerminalMessage = (s: TurnIntent): boolean =>
  s.resolution === "fallback" || s.resolution === "presentation"

/** What to do with `intent`, given every intent of its run for its session (any state). */
export const siblingVerdict = (intent: TurnIntent, siblings: ReadonlyArray<TurnIntent>): SiblingVerdict => {
  const others = siblings.filter(
    (s) =>
      s.intentId !== intent.intentId &&
      s.runId === intent.runId &&
      s.targetSessionId === intent.targetSessionId
  )
  const requested = time(intent.requestedAt)
  // Only a newer event's message: a resolution stored late (confirmed on a later pass) of an
  // older sibling says nothing about when its message went out.
  // In the same millisecond the order is unknown: only a terminal message covers then (a
  // workflow prompt resolved with it may be the one the model then cancelled from).
  const cover = others.find(
    (s) =>
      s.resolvedAt !== null &&
      s.resolution !== null &&
      s.resolutionMessageId !== null &&
      (isNewer(s, intent) || (isTied(s, intent) && isTerminalMessage(s)))
  )
  if (cover !== undefined) return { _tag: "Covered", by: cover }
  // The run's end shows in a sibling made eligible before this claim loss was reported, or one
  // answered by a terminal message (a presentation or a fallback: only ended runs get those).
  const ended =
    intent.cause === "claimLost"
      ? others.find((s) => (s.eligibleAt !== null && time(s.eligibleAt) <= requested) || isTerminalMessage(s))
      : undefined
  if (ended !== undefined) {
    return ended.resolvedAt !== null && ended.resolution !== null && ended.resolutionMessageId !== null
      ? { _tag: "Covered", by: ended }
      : { _tag: "Wait", newer: ended }
  }
  // A late claim loss (requested once this intent was eligible) waits for this one, not vice versa.
  const lateClaimLoss = (s: TurnIntent) =>
    s.cause === "claimLost" && intent.eligibleAt !== null && time(s.requestedAt) >= time(intent.eligibleAt)
  // Ties are broken by ID, so exactly one of two tied pending intents waits for the other.
  const newer = others.find(
    (s) =>
      s.resolvedAt === null &&
      (isNewer(s, intent) || (isTied(s, intent) && s.intentId > intent.intentId)) &&
      !lateClaimLoss(s)
  )
  return newer === undefined ? { _tag: "Send" } : { _tag: "Wait", newer }
}
