/**
 * CommandRunner: runs one command given as argv (never through a shell) and reports its exit
 * code and the tail of its output. Interrupting the effect kills the command's whole process
 * group at once, so a cancelled Monitor leaves nothing running. The Monitor built-in gets this
 * service injected when its definition is built; tests inject the same live runner with fake
 * commands on PATH.
 */
import { spawn } from "node:child_process"
import { Context, Data, Effect, Layer } from "effect"

export interface CommandSpec {
  /** Program and arguments; the program is looked up on PATH like `execvp` does. */
  readonly argv: ReadonlyArray<string>
  readonly cwd?: string
  /** How many bytes of each stream to keep (the tail); default 16 KiB. */
  readonly maxOutputBytes?: number
}

export interface CommandResult {
  /** The exit code, or null when a signal ended the command. */
  readonly exitCode: number | null
  readonly signal: string | null
  /** Tails of the output, at most `maxOutputBytes` each (bytes decoded as UTF-8). */
  readonly stdout: string
  readonly stderr: string
  /** Whether output was dropped to stay within the bound. */
  readonly truncated: boolean
}

/** The command could not be started (not found, not executable, bad cwd). */
export class CommandNotStarted extends Data.TaggedError("CommandNotStarted")<{
  readonly program: string
  readonly reason: string
}> {
  override get message() {
    return `cannot run ${JSON.stringify(this.program)}: ${this.reason}`
  }
}

export interface CommandRunnerService {
  readonly run: (spec: CommandSpec) => Effect.Effect<CommandResult, CommandNotStarted>
}

export class CommandRunner extends Context.Tag("pi-workflow-turns/CommandRunner")<
  CommandRunner,
  CommandRunnerService
>() {}

const DEFAULT_MAX_OUTPUT = 16 * 1024

/** Keeps the last `limit` bytes written to it. */
const tailBuffer = (limit: number) => {
  let chunks: Array<Buffer> = []
  let size = 0
  let dropped = false
  return {
    push(chunk: Buffer) {
      chunks.push(chunk)
      size += chunk.length
      while (size > limit && chunks.length > 0) {
        const first = chunks[0] as Buffer
        const excess = size - limit
        if (first.length <= excess) {
          chunks.shift()
          size -= first.length
        } else {
          chunks[0] = first.subarray(excess)
          size -= excess
        }
        dropped = true
      }
    },
    text: () => Buffer.concat(chunks).toString("utf8"),
    dropped: () => dropped,
    clear() {
      chunks = []
    }
  }
}

const killGroup = (pid: number | undefined) => {
  if (pid === undefined) return
  try {
    // Negative PID: the whole group the command leads (it was spawned detached).
    process.kill(-pid, "SIGKILL")
  } catch {
    // Already gone.
  }
}

/** Run with Node's child_process; the effect completes when the command exits. */
export const runCommand = (spec: CommandSpec): Effect.Effect<CommandResult, CommandNotStarted> =>
  Effect.async<CommandResult, CommandNotStarted>((resume) => {
    const [program, ...args] = spec.argv
    if (program === undefined || program.length === 0) {
      resume(Effect.fail(new CommandNotStarted({ program: "", reason: "argv is empty" })))
      return
    }
    const limit = spec.maxOutputBytes ?? DEFAULT_MAX_OUTPUT
    const stdout = tailBuffer(limit)
    const stderr = tailBuffer(limit)
    const child = spawn(program, args, {
      cwd: spec.cwd,
      shell: false,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let done = false
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
    child.on("error", (error) => {
      if (done) return
      done = true
      resume(Effect.fail(new CommandNotStarted({ program, reason: error.message })))
    })
    child.on("close", (code, signal) => {
      if (done) return
      done = true
      resume(
        Effect.succeed({
          exitCode: code,
          signal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          truncated: stdout.dropped() || stderr.dropped()
        })
      )
    })
    return Effect.sync(() => {
      if (done) return
      done = true
      killGroup(child.pid)
      stdout.clear()
      stderr.clear()
    })
  })

export const layer: Layer.Layer<CommandRunner> = Layer.succeed(
  CommandRunner,
  CommandRunner.of({ run: runCommand })
)
