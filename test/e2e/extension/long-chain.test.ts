/**
 * Real Pi, a long chain of synchronous compute nodes: Pi keeps answering RPC commands while the
 * run goes on. The engine yields to the event loop between steps; without that, the whole chain
 * ran in one go and `/workflow start` and every `get_state` were answered only after the run's
 * presentation was appended. Judged by the order of what Pi wrote, not by a time bound.
 */
import { describe, expect, it } from "vitest"
import { isCustomMessageEnd } from "../harness/rpc-records.ts"
import { PRESENTATION } from "./lab.ts"
import { startScenario } from "./support.ts"

const STEPS = 500

/** s1 → s2 → … → s500, each a synchronous compute node. */
const CHAIN = `const nodes = {}
const edges = []
for (let i = 1; i <= ${STEPS}; i++) {
  nodes["s" + i] = { type: "compute", run: () => ({ i }) }
  if (i < ${STEPS}) edges.push({ from: "s" + i, to: "s" + (i + 1) })
}
export default { name: "chain", startAt: "s1", maxSteps: ${STEPS}, nodes, edges }
`

const isPresentationEnd = (record: Readonly<Record<string, unknown>>): boolean =>
  isCustomMessageEnd(record, PRESENTATION)

describe("a long synchronous chain in real Pi", () => {
  it("get_state is answered while the run is still going", async () => {
    const s = await startScenario({
      workflows: { "chain.workflow.mjs": CHAIN },
      script: [{ text: "Noted." }]
    })
    const cursor = s.pi.mark()
    const started = await s.pi.send({ type: "prompt", message: "/workflow start chain" }, 120_000)
    const state = await s.pi.send({ type: "get_state" }, 120_000)
    expect(state.success).toBe(true)
    const end = await s.pi.waitFor(isPresentationEnd, {
      after: cursor,
      timeoutMs: 120_000,
      label: "the chain's presentation"
    })
    const log = s.pi.events()
    // Both answers came before the run's end: Pi served them between the chain's steps.
    expect(log.indexOf(started)).toBeLessThan(log.indexOf(end))
    expect(log.indexOf(state)).toBeLessThan(log.indexOf(end))
    await s.pi.waitForQuiet({ after: cursor, timeoutMs: 30_000, quietMs: 200 })
  }, 180_000)
})
