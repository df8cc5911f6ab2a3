/** The record of a model request that answers a terminal successor, once the request is sent. */
import { describe, expect, it } from "vitest"
import { answeredSuccessor, beforeProviderCall } from "../../src/extension/model-request.ts"

const fallback = { role: "custom", customType: "pi-workflows-deferred-turn", content: "x" }
const presentation = { role: "custom", customType: "pi-workflows-presentation", content: "y" }

/** The request for `messages`: what is recorded before it is sent, and after. */
const request = (messages: ReadonlyArray<unknown>) => {
  const out: Array<[string, unknown]> = []
  let send: (() => void) | undefined
  beforeProviderCall(
    answeredSuccessor(messages),
    (then) => {
      send = then
    },
    (type, data) => out.push([type, data])
  )
  const beforeSend = [...out]
  send?.()
  return { beforeSend, afterSend: out, armed: send !== undefined }
}

describe("the successor-requested record", () => {
  it("is written once the request answering a fallback or a presentation has been sent, not before", () => {
    const answered = request([{ role: "user" }, fallback])
    expect(answered.beforeSend).toEqual([])
    expect(answered.afterSend).toEqual([
      ["pi-workflows-successor-requested", { answers: "pi-workflows-deferred-turn" }]
    ])
    expect(request([presentation]).afterSend).toHaveLength(1)
  })
  it("is not asked for by other requests (a step prompt, a tool result, a user prompt)", () => {
    for (const messages of [
      [{ role: "custom", customType: "pi-workflows-agent-step" }],
      [fallback, { role: "toolResult" }],
      []
    ]) {
      expect(request(messages)).toEqual({ beforeSend: [], afterSend: [], armed: false })
    }
  })
})
