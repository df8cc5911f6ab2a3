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
