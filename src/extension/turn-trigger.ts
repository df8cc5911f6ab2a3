/**
 * At session start: give a successor that Pi wrote but never answered its model turn, without a
 * second copy of it (the decision: `delivery/unanswered-successor.ts`). Reads the branch as Pi
 * stores it and sends the hidden trigger only while the session is idle, so a turn that session
 * start already began (a fallback, a step prompt) is never joined by a second one.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import { type TailEntry, triggerMessage, unansweredSuccessor } from "../delivery/unanswered-successor.ts"

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
