/**
 * Whether an `agent_settled` handler of this extension runs (docs/protocol.md, rule 4). Pi holds
 * every turn-triggering send made while its settle handlers run and reports the session idle
 * meanwhile, so natural delivery must wait until ours has returned. The entry marks the handler
 * synchronously as its first statement (before it awaits the lazily loaded application) and
 * clears the mark when it returns; the live PiSession reads it. No Effect here: the entry loads
 * it at Pi's start-up.
 */
export interface SettleMark {
  /** Mark a handler as running; returns what clears this mark (later calls do nothing). */
  readonly enter: () => () => void
  readonly running: () => boolean
  /**
   * Call `wake` once no handler runs (at once when none runs now); returns what cancels the
   * wait.
   */
  readonly onDone: (wake: () => void) => () => void
}

export const makeSettleMark = (): SettleMark => {
  let running = 0
  let waiters = new Set<() => void>()
  return {
    enter: () => {
      running++
      let cleared = false
      return () => {
        if (cleared) return
        cleared = true
        running--
        if (running > 0) return
        const woken = waiters
        waiters = new Set()
        for (const wake of woken) wake()
      }
    },
    running: () => running > 0,
    onDone: (wake) => {
      if (running === 0) {
        wake()
        return () => undefined
      }
      // A fresh function per wait, so the same `wake` twice waits twice.
      const once = () => wake()
      waiters.add(once)
      return () => {
        waiters.delete(once)
      }
    }
  }
}
