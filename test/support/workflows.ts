/** Workflow definitions several tests run. */

/** A workflow whose only node is a compute step that throws `message`: its run fails at once. */
export const crashing = (message: string) => ({
  name: "crash",
  startAt: "boom",
  nodes: {
    boom: {
      type: "compute",
      run: () => {
        throw new Error(message)
      }
    }
  },
  edges: []
})

/** A workflow whose only node is an agent step without a time limit: its run waits for the model. */
export const patient = {
  name: "patient",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "answer", timeoutMs: null } },
  edges: []
}
