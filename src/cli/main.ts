/**
 * The `pi-workflow-turns` program (`bin.ts` is the executable). Runs the @effect/cli commands and turns every failure into one
 * line on stderr and a non-zero exit: 1 when the answer is "no" (doctor found problems, an ID
 * does not exist), 2 for bad input or a database that cannot be read, 70 for a bug. Never a
 * stack trace.
 */
import { CliConfig, Command, ValidationError } from "@effect/cli"
import { FileSystem, Path, Terminal } from "@effect/platform"
import { Cause, Console, Effect, Exit, Layer, Option } from "effect"
import { root } from "./commands.ts"
import { layerFromEnv } from "../telemetry/otlp.ts"
import { CliFailure, shown } from "./format.ts"

export const VERSION = "0.1.0"
const NAME = "pi-workflow-turns"

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes
const stripAnsi = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, "")

const oneLine = (text: string): string =>
  stripAnsi(text)
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .join(" ")

// Every write below passes `shown` (format.ts): the one redaction boundary of the CLI.
const say = (message: string) => {
  if (message !== "") process.stderr.write(`${NAME}: ${shown(oneLine(message))}\n`)
}

/** @effect/cli's generic lines under every option in help; each option's own description stays. */
const GENERIC = new Set([
  "A user-defined piece of text.",
  "A true or false value.",
  "An integer.",
  "This setting is optional."
])
const withoutGeneric = (text: string): string =>
  text.includes("\n")
    ? text
        .split("\n")
        .filter((line) => !GENERIC.has(stripAnsi(line).trim()))
        .join("\n")
        .replace(/\n{3,}/g, "\n\n")
    : text

/**
 * @effect/cli prints parse errors through Console.error as a help document: keep it one line.
 * Its help text is always styled; keep the styling for a terminal only.
 */
const oneLineErrors = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Console.consoleWith((current) =>
    Effect.withConsole(effect, {
      ...current,
      log: (...args: ReadonlyArray<unknown>) =>
        process.stdout.isTTY === true
          ? current.log(...args.map((a) => shown(withoutGeneric(String(a)))))
          : current.log(...args.map((a) => shown(withoutGeneric(stripAnsi(String(a)))))),
      error: (...args: ReadonlyArray<unknown>) => Effect.sync(() => say(args.map(String).join(" ")))
    })
  )

/** The platform services @effect/cli asks for; these commands use none of them but the terminal. */
const terminal = Terminal.Terminal.of({
  columns: Effect.sync(() => process.stdout.columns ?? 80),
  rows: Effect.sync(() => process.stdout.rows ?? 24),
  isTTY: Effect.sync(() => process.stdout.isTTY === true),
  readInput: Effect.dieMessage("pi-workflow-turns does not read interactive input"),
  readLine: Effect.dieMessage("pi-workflow-turns does not read interactive input"),
  display: (text) => Effect.sync(() => void process.stdout.write(shown(text)))
})
// Help shows each command's own options with their descriptions: no generic type lines ("A true
// or false value.") and no built-in options (--wizard, --completions, --log-level) in the list.
const environment = Layer.mergeAll(
  CliConfig.layer({ showBuiltIns: false, showTypes: false }),
  FileSystem.layerNoop({}),
  Path.layer,
  Layer.succeed(Terminal.Terminal, terminal)
)

/** Another process held a lock past the budget: the store failure's reason, not its words. */
const busy = (error: object) => "reason" in error && error.reason === "Lock"

/** The exit code and the line to print for a failure. */
const describe = (cause: Cause.Cause<unknown>): { readonly code: number; readonly line: string } => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) {
    const defect = Cause.squash(cause)
    return { code: 70, line: `internal error: ${defect instanceof Error ? defect.message : String(defect)}` }
  }
  const error = failure.value
  if (error instanceof CliFailure) return { code: error.exitCode, line: error.message }
  // @effect/cli already printed its parse errors (one line, through `oneLineErrors`).
  if (ValidationError.isValidationError(error)) return { code: 2, line: "" }
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const message = "message" in error ? String(error.message) : String(error._tag)
    if (error._tag === "StoreFailure" && busy(error)) {
      return { code: 3, line: "the database is busy (another process holds a lock); try again in a moment" }
    }
    return { code: 2, line: message }
  }
  return { code: 2, line: String(error) }
}

/** The subcommand's name for the CLI's root span: only a plain word (never an option's value). */
const commandName = (argv: ReadonlyArray<string>): Record<string, string> => {
  const word = argv[2]
  return word !== undefined && /^[a-z][a-z-]{0,31}$/.test(word) ? { "cli.command": word } : {}
}

export const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  const cli = Command.run(root, { name: NAME, version: VERSION })
  // Traces go out over OTLP only when OTEL_EXPORTER_OTLP_ENDPOINT (…) asks for it; the layer's
  // scope closes when the program ends, which flushes them (bounded) before the exit code.
  const telemetry = layerFromEnv(process.env, (line) => say(`warning: ${line}`))
  const exit = await Effect.runPromiseExit(
    cli(argv).pipe(
      oneLineErrors,
      Effect.withSpan("WorkflowCli.run", { attributes: commandName(argv) }),
      Effect.provide(environment),
      Effect.provide(telemetry)
    )
  )
  if (Exit.isSuccess(exit)) return 0
  const { code, line } = describe(exit.cause)
  say(line)
  return code
}
