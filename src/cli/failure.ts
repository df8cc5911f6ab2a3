/** The CLI's own failure, turned into one line and an exit code by `main.ts`. */
import { Data } from "effect"

/** A CLI-level failure: one line for the operator, and the exit code. */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly message: string
  readonly exitCode: number
}> {}
