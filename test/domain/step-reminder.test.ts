import { describe, expect, it } from "vitest"
import { decideReminder, describeDeadline, type ReminderFacts } from "../../src/domain/step-reminder.ts"

const quiet: ReminderFacts = {
  aborted: false,
  stopped: null,
  successorPending: false,
  abortInFlight: false,
  promptInBranch: true,
  taken: []
}

describe("the step reminder decision", () => {
  it("reminds twice, then notices once, then stays quiet", () => {
    expect(decideReminder(quiet)).toEqual({ _tag: "Remind", reminder: 1 })
    expect(decideReminder({ ...quiet, taken: [1] })).toEqual({ _tag: "Remind", reminder: 2 })
    // A reminder seen in the branch and in the store counts once.
    expect(decideReminder({ ...quiet, taken: [1, 1, 2] })).toEqual({ _tag: "Notice" })
    expect(decideReminder({ ...quiet, taken: [1, 2, 3] })).toEqual({ _tag: "None", why: "quiet" })
    // A lost first reminder (taken, never written) does not make room for a third.
    expect(decideReminder({ ...quiet, taken: [2] })).toEqual({ _tag: "Notice" })
  })

  it("never reminds an aborted, stopped, owed or unseen step", () => {
    expect(decideReminder({ ...quiet, aborted: true })._tag).toBe("None")
    for (const stopped of ["userHold", "pause", "cancel", "shutdown", "notRunning"] as const)
      expect(decideReminder({ ...quiet, stopped })).toEqual({ _tag: "None", why: "stopped" })
    expect(decideReminder({ ...quiet, successorPending: true })).toEqual({
      _tag: "None",
      why: "successorPending"
    })
    expect(decideReminder({ ...quiet, abortInFlight: true })).toEqual({ _tag: "None", why: "abortInFlight" })
    expect(decideReminder({ ...quiet, promptInBranch: false })).toEqual({
      _tag: "None",
      why: "promptNotShown"
    })
  })

  it("says the deadline in words", () => {
    // What is left, in the one duration format of status views and the CLI.
    expect(describeDeadline(45_000, 0)).toBe("The step's limit ends at 1970-01-01T00:00:45.000Z (in 45s).")
    expect(describeDeadline(8 * 3_600_000, 0)).toContain("(in 8h).")
    expect(describeDeadline(3_600_000 + 60_000, 0)).toContain("(in 1h 1m).")
    expect(describeDeadline(null, 0)).toBe("The step has no time limit.")
    expect(describeDeadline(1_000, 2_000)).toContain("passed at 1970-01-01T00:00:01.000Z")
  })
})
