/**
 * The live PiSession: a thin bridge from Pi's `ExtensionAPI` and the latest `ctx` to the
 * PiSession port. It holds no policy; the adapter feeds it Pi's events (`setContext`,
 * `settled`, lifecycle flags) and the core reads state and acts through the port. At session
 * start the same bridge gives a successor Pi wrote but never answered its turn
 * (`triggerUnansweredTurn`).
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { Deferred, Effect, Layer } from "effect"
import { type BranchMessage, type Lifecycle, PiSession, SendFailed } from "../session/pi-session.ts"
import { notifyUser, showStatusLine, shownMessage } from "./outbound.ts"
import { makeSettleMark, type SettleMark } from "./settle-mark.ts"
import { type TailEntry, triggerMessage, unansweredSuccessor } from "../delivery/unanswered-successor.ts"

export interface PiBridge {
  /** Remember the newest context; any of Pi's ctx objects can act for the session. */
  readonly setContext: (ctx: ExtensionContext) => void
  /** `agent_settled` was seen: release everything waiting for idle. */
  readonly settled: () => void
  readonly setShuttingDown: (value: boolean) => void
  readonly setUserHold: (value: boolean) => void
  readonly lifecycle: () => Lifecycle
  readonly layer: Layer.Layer<PiSession>
}

/**
 * `settleMark` is the entry's mark of a running `agent_settled` handler (set before the
 * application loads, so it is made outside this bridge).
 */
export const makePiBridge = (pi: ExtensionAPI, settleMark: SettleMark = makeSettleMark()): PiBridge => {
  let ctx: ExtensionContext | undefined
  let flags: Lifecycle = { shuttingDown: false, userHold: false }
  // One waiter per busy period; settle completes it and the next busy period makes a new one.
  let idleSignal: Deferred.Deferred<void> | undefined

  const isIdle = () => ctx === undefined || ctx.isIdle()

  const session = PiSession.of({
    sessionId: Effect.sync(() => ctx?.sessionManager.getSessionId() ?? "unknown-session"),
    isIdle: Effect.sync(isIdle),
    awaitIdle: Effect.suspend(() => {
      if (isIdle()) return Effect.void
      if (idleSignal === undefined) idleSignal = Effect.runSync(Deferred.make<void>())
      return Deferred.await(idleSignal)
    }),
    settling: Effect.sync(settleMark.running),
    settleDone: Effect.async<void>((resume) => {
      const cancel = settleMark.onDone(() => resume(Effect.void))
      return Effect.sync(cancel)
    }),
    // The one redaction boundary toward the model and the session file (outbound.ts).
    send: (message, options) =>
      Effect.try({
        try: () =>
          pi.sendMessage(shownMessage(message), {
            deliverAs: options.deliverAs,
            triggerTurn: options.triggerTurn
          }),
        catch: (cause) => new SendFailed({ message: `Pi refused the message: ${String(cause)}`, cause })
      }),
    branch: Effect.sync((): ReadonlyArray<BranchMessage> => {
      if (ctx === undefined) return []
      const out: BranchMessage[] = []
      for (const entry of ctx.sessionManager.getBranch()) {
        if (entry.type === "custom_message") {
          out.push({
            entryId: entry.id,
            customType: entry.customType,
            content: entry.content,
            details: entry.details
          })
        }
      }
      return out
    }),
    abort: Effect.sync(() => ctx?.abort()),
    lifecycle: Effect.sync(() => flags),
    notify: (text, level) => Effect.sync(() => notifyUser(ctx, text, level)),
    showStatus: (key, text) => Effect.sync(() => showStatusLine(ctx, key, text)),
    terminalUi: Effect.sync(() => ctx?.hasUI === true && ctx.mode === "tui")
  })

  return {
    setContext: (next) => {
      ctx = next
    },
    settled: () => {
      const signal = idleSignal
      idleSignal = undefined
      if (signal !== undefined) Effect.runSync(Deferred.succeed(signal, undefined))
    },
    setShuttingDown: (value) => {
      flags = { ...flags, shuttingDown: value }
    },
    setUserHold: (value) => {
      flags = { ...flags, userHold: value }
    },
    lifecycle: () => flags,
    layer: Layer.succeed(PiSession, session)
  }
}

/*
 * At session start: give a successor that Pi wrote but never answered its model turn, without a
 * second copy of it (the decision: `delivery/unanswered-successor.ts`). Reads the branch as Pi
 * stores it and sends the hidden trigger only while the session is idle, so a turn that session
 * start already began (a fallback, a step prompt) is never joined by a second one.
 */
type BranchEntry = ReturnType<ExtensionContext["sessionManager"]["getBranch"]>[number]

const tailEntry = (entry: BranchEntry): TailEntry => {
  switch (entry.type) {
    case "custom_message":
      return { _tag: "Custom", entryId: entry.id, customType: entry.customType, details: entry.details }
    case "custom":
      return { _tag: "State", customType: entry.customType }
    case "message":
      return { _tag: "Message", role: entry.message.role }
    // Summaries replace conversation in the model's context: treat them as conversation.
    case "compaction":
    case "branch_summary":
      return { _tag: "Message", role: entry.type }
    default:
      return { _tag: "Other" }
  }
}

/** Send the trigger when the branch ends with an unanswered successor; true when sent. */
export const triggerUnansweredTurn = (pi: ExtensionAPI, ctx: ExtensionContext): boolean => {
  if (!ctx.isIdle()) return false
  const decision = unansweredSuccessor(ctx.sessionManager.getBranch().map(tailEntry))
  if (decision._tag !== "Trigger") return false
  pi.sendMessage(triggerMessage(decision.entryId), { triggerTurn: true })
  return true
}
