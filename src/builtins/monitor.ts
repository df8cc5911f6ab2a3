/**
 * Commands, and the `monitor` built-in that waits on one. CommandRunner runs one command given as
 * argv (never through a shell) and reports its exit code and the tail of its output;
 * interrupting the effect kills the command's whole process group at once, so a cancelled
 * Monitor leaves nothing running. The built-ins get this service injected when their
 * definitions are built (autoimplement's guards read through it too); tests inject the same live
 * runner with fake commands on PATH.
 *
 * The `monitor` built-in waits for an external condition by running one command on a schedule
 * until it exits 0 or the deadline passes, then reports what it saw. The check is a compute node:
 * the engine already races compute effects against cancel, park and timeout, so interrupting the
 * node kills the command at once. A check only observes, so running it again after a takeover
 * is harmless. Output is bounded and redacted before it becomes the run's result.
 */
import { spawn } from "node:child_process"
import { Clock, Context, Data, Effect, Layer, Option, Ref, Schedule, Schema } from "effect"
import { redactSecrets } from "../domain/redact.ts"
import type { StepContext, WorkflowDefinition } from "../engine/definition.ts"

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

// The `monitor` built-in.

export const MONITOR_REVISION = 1
export const DEFAULT_INTERVAL_MS = 30_000
export const DEFAULT_DEADLINE_MS = 30 * 60_000
const MAX_DEADLINE_MS = 24 * 60 * 60_000
/** Characters of each output stream kept in the result. */
export const MAX_REPORTED_CHARS = 2_000
/** Bytes of each stream the runner keeps while the command runs. */
const MAX_CAPTURED_BYTES = 16 * 1024
/** The node's own limit is a backstop: the check loop stops itself at the deadline. */
const BACKSTOP_MS = 60_000

const Millis = (min: number, max: number) => Schema.Int.pipe(Schema.between(min, max))

export const MonitorInput = Schema.Struct({
  /** Program and arguments, e.g. ["gh", "pr", "checks", "42"]; never a shell string. */
  command: Schema.Array(Schema.String.pipe(Schema.maxLength(4_096))).pipe(
    Schema.minItems(1),
    Schema.maxItems(64),
    Schema.filter((argv) => (argv[0] ?? "").trim().length > 0 || "command[0] must name a program")
  ),
  /** Pause between checks (100 ms – 1 h; default 30 s). */
  intervalMs: Schema.optional(Millis(100, 60 * 60_000)),
  /** How long to keep checking (100 ms – 24 h; default 30 min). */
  deadlineMs: Schema.optional(Millis(100, MAX_DEADLINE_MS)),
  cwd: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  /** What the condition means, for the report. */
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(500)))
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type MonitorInput = typeof MonitorInput.Type

export interface Observation {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
  readonly truncated: boolean
}

export interface MonitorResult {
  readonly status: "met" | "deadline"
  readonly description: string | null
  readonly command: ReadonlyArray<string>
  readonly checks: number
  readonly elapsedMs: number
  readonly last: Observation | null
}

const bound = (text: string): { readonly text: string; readonly cut: boolean } => {
  const clean = redactSecrets(text)
  return clean.length <= MAX_REPORTED_CHARS
    ? { text: clean, cut: false }
    : { text: `…${clean.slice(clean.length - MAX_REPORTED_CHARS)}`, cut: true }
}

/** What one check reports: redacted, and at most MAX_REPORTED_CHARS of each stream (the tail). */
export const observationOf = (result: CommandResult): Observation => {
  const stdout = bound(result.stdout)
  const stderr = bound(result.stderr)
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    stdout: stdout.text,
    stderr: stderr.text,
    truncated: result.truncated || stdout.cut || stderr.cut
  }
}

const decodeInput = Schema.decodeUnknownOption(MonitorInput)

const inputOf = (context: StepContext): MonitorInput =>
  Option.getOrThrowWith(decodeInput(context.input), () => new Error("monitor input is invalid"))

/** Check until exit 0 or the deadline; the in-flight command is killed when the deadline hits. */
export const watch = (runner: CommandRunnerService, input: MonitorInput) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const checks = yield* Ref.make(0)
    const last = yield* Ref.make<Observation | null>(null)
    const check = runner
      .run({
        argv: input.command,
        maxOutputBytes: MAX_CAPTURED_BYTES,
        ...(input.cwd === undefined ? {} : { cwd: input.cwd })
      })
      .pipe(
        Effect.map(observationOf),
        Effect.tap((observation) => Ref.set(last, observation)),
        Effect.tap(() => Ref.update(checks, (n) => n + 1))
      )
    const met = yield* check.pipe(
      Effect.repeat({
        schedule: Schedule.spaced(input.intervalMs ?? DEFAULT_INTERVAL_MS),
        until: (observation) => observation.exitCode === 0
      }),
      Effect.timeoutOption(input.deadlineMs ?? DEFAULT_DEADLINE_MS)
    )
    const result: MonitorResult = {
      status: Option.isSome(met) ? "met" : "deadline",
      description: input.description ?? null,
      command: input.command.map(redactSecrets),
      checks: yield* Ref.get(checks),
      elapsedMs: (yield* Clock.currentTimeMillis) - started,
      last: yield* Ref.get(last)
    }
    return result
  })

const describeResult = (result: MonitorResult): string => {
  const what = result.description === null ? result.command.join(" ") : result.description
  const head =
    result.status === "met"
      ? `Monitor: the condition is met (${what}) after ${result.checks} check(s).`
      : `Monitor: the deadline passed before the condition was met (${what}); ${result.checks} check(s).`
  const last = result.last
  if (last === null) return head
  const exit = last.exitCode === null ? `signal ${last.signal ?? "unknown"}` : `exit ${last.exitCode}`
  const output = [last.stdout.trim(), last.stderr.trim()].filter((text) => text.length > 0).join("\n")
  return output.length === 0 ? `${head} Last check: ${exit}.` : `${head} Last check: ${exit}:\n${output}`
}

const isMonitorResult = (value: unknown): value is MonitorResult =>
  typeof value === "object" && value !== null && "status" in value && "checks" in value

/** The definition, with the runner its check uses. */
export const makeMonitor = (runner: CommandRunnerService): WorkflowDefinition => ({
  name: "monitor",
  revision: MONITOR_REVISION,
  description:
    "Wait for an authorized external condition: run a command (argv, no shell) on a schedule until it exits 0 or a deadline passes, and report what it saw.",
  startAt: "watch",
  maxSteps: 1,
  input: MonitorInput,
  nodes: {
    watch: {
      type: "compute",
      description: "Run the check until it succeeds or the deadline passes.",
      timeoutMs: ({ input }) =>
        (Option.getOrUndefined(decodeInput(input))?.deadlineMs ?? DEFAULT_DEADLINE_MS) + BACKSTOP_MS,
      run: (context) => Effect.suspend(() => watch(runner, inputOf(context)))
    }
  },
  edges: [],
  presentation: ({ result }) => (isMonitorResult(result) ? describeResult(result) : JSON.stringify(result))
})
