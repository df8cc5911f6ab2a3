/**
 * Step reminders at `agent_settled`: the model ended its turn (not aborted) while the session's
 * agent step still awaits its `submit`. The facts are read here, the decision is
 * `domain/step-reminder.ts`, and each reminder (or the user's notice after the second) is taken
 * in the StepReminderStore before it is sent: the first taker wins, so no restart or second
 * process sends one twice, and a crash between the take and the send loses it rather than
 * doubling it. The branch is read too, so a reminder Pi wrote counts even when its row does not.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { AGENT_STEP_TYPE, NOTIFICATION_TYPE, REMINDER_TYPE } from "../domain/message-types.ts"
import { redactText } from "../domain/redact.ts"
import {
  decideReminder,
  type OpenStep,
  type ReminderDecision,
  type ReminderFacts,
  reminderMessage,
  waitingNotice
} from "../domain/step-reminder.ts"
import { Engine } from "../engine/engine.ts"
import { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import { type BranchMessage, PiSession } from "../session/pi-session.ts"
import { StepReminderStore } from "../store/step-reminder-store.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { USER_HOLD_REASON } from "../domain/run-condition.ts"

const StepDetails = Schema.Struct({ requestId: Schema.String })
const ReminderDetails = Schema.Struct({ attemptId: Schema.String, reminder: Schema.Number })
const decodeStep = Schema.decodeUnknownOption(StepDetails)
const decodeReminder = Schema.decodeUnknownOption(ReminderDetails)

const promptShown = (branch: ReadonlyArray<BranchMessage>, requestId: string) =>
  branch.some(
    (entry) =>
      entry.customType === AGENT_STEP_TYPE &&
      Option.exists(decodeStep(entry.details), (details) => details.requestId === requestId)
  )

const remindersShown = (branch: ReadonlyArray<BranchMessage>, attemptId: string): ReadonlyArray<number> =>
  branch.flatMap((entry) => {
    if (entry.customType !== REMINDER_TYPE) return []
    const details = decodeReminder(entry.details)
    return Option.isSome(details) && details.value.attemptId === attemptId ? [details.value.reminder] : []
  })

/** Why the run cannot be reminded now, from the session's lifecycle and the run row. */
const stoppedBy = (step: OpenStep, sessionId: string) =>
  Effect.gen(function* () {
    const lifecycle = yield* (yield* PiSession).lifecycle
    if (lifecycle.shuttingDown) return "shutdown" as const
    if (lifecycle.userHold) return "userHold" as const
    const active = yield* (yield* Engine).active(sessionId)
    if (Option.isNone(active) || active.value.runId !== step.runId) return "notRunning" as const
    const run = active.value
    if (run.parkedReason === USER_HOLD_REASON) return "userHold" as const
    if (run.cancelRequested !== null) return "cancel" as const
    if (run.pauseRequested) return "pause" as const
    if (run.state !== "running" || run.openRequestId !== step.requestId) return "notRunning" as const
    return null
  })

export type ReminderOutcome =
  | ReminderDecision
  | { readonly _tag: "None"; readonly why: "noOpenStep" | "taken" }

/** One reminder decision for the settle that just happened (`aborted`: Pi's flag). */
export const remindAfterSettle = (aborted: boolean) =>
  Effect.gen(function* () {
    const session = yield* PiSession
    const sessionId = yield* session.sessionId
    const open = yield* (yield* Engine).openStep(sessionId)
    if (Option.isNone(open)) return { _tag: "None", why: "noOpenStep" } satisfies ReminderOutcome
    const step = open.value
    const reminders = yield* StepReminderStore
    const branch = yield* session.branch
    const intents = yield* TurnIntentStore
    const owed = Effect.map(
      intents.list({ runId: step.runId, targetSessionId: sessionId, state: "pending", limit: 1 }),
      (found) => found.length > 0
    )
    const facts: ReminderFacts = {
      aborted,
      stopped: yield* stoppedBy(step, sessionId),
      successorPending: yield* owed,
      abortInFlight: (yield* (yield* AbortBookkeeping).inFlight).length > 0,
      promptInBranch: promptShown(branch, step.requestId),
      taken: [
        ...(yield* reminders.forAttempt(step.attemptId)).map((r) => r.ordinal),
        ...remindersShown(branch, step.attemptId)
      ]
    }
    const decision = decideReminder(facts)
    if (decision._tag === "None") return decision
    const ordinal = decision._tag === "Remind" ? decision.reminder : 3
    const won = yield* reminders.take({ ...step, sessionId, ordinal })
    if (!won) return { _tag: "None", why: "taken" } satisfies ReminderOutcome
    // Read again after the take: an intent made pending meanwhile (a periodic pass may already be
    // sending its fallback) comes first; this reminder is then spent unsent (model/reminders.pml).
    if (yield* owed) return { _tag: "None", why: "successorPending" } satisfies ReminderOutcome
    const now = yield* Clock.currentTimeMillis
    if (decision._tag === "Remind") {
      const message = reminderMessage(step, decision.reminder, now)
      yield* session.send(
        { ...message, content: redactText(message.content) },
        { deliverAs: "followUp", triggerTurn: true }
      )
    } else {
      // Shown to the user only: display-only, no turn, kept out of the model's context.
      yield* session.send(
        {
          customType: NOTIFICATION_TYPE,
          display: true,
          content: redactText(waitingNotice(step, now)),
          details: { kind: "stepWaiting", runId: step.runId, nodeId: step.nodeId, attemptId: step.attemptId }
        },
        { deliverAs: "followUp", triggerTurn: false }
      )
    }
    return decision
  }).pipe(Effect.withSpan("StepReminders.afterSettle"))
