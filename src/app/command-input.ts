/**
 * `/workflow` command arguments for the user: `start <name> [json]`, `status [runId]`,
 * `cancel [runId]`, `pause [runId]`, `resume [runId]`, `list`. Pure parsing; the command handler acts.
 */
import { Either } from "effect"
import { clipCodePoints as clip, MAX_JSON_DEPTH, nestsDeeperThan, tooDeep } from "../domain/text.ts"
import { MAX_ERROR_CHARS, quote } from "./text-bounds.ts"

export type CommandInput =
  | { readonly _tag: "list" }
  | { readonly _tag: "start"; readonly workflow: string; readonly input: unknown }
  | { readonly _tag: "status" | "cancel" | "pause" | "resume"; readonly runId: string | undefined }

export const COMMAND_USAGE =
  "usage: /workflow list | start <name> [json input] | status [runId] | cancel [runId] | pause [runId] | resume [runId]"

export const parseCommand = (args: string): Either.Either<CommandInput, string> => {
  const trimmed = args.trim()
  const [verb = "", ...restParts] = trimmed.split(/\s+/)
  const rest = trimmed.slice(verb.length).trim()
  switch (verb) {
    case "":
    case "list":
      return rest === "" ? Either.right({ _tag: "list" }) : Either.left(COMMAND_USAGE)
    case "start": {
      const [workflow] = restParts
      if (workflow === undefined)
        return Either.left(`/workflow start needs a workflow name. ${COMMAND_USAGE}`)
      const json = rest.slice(workflow.length).trim()
      if (json === "") return Either.right({ _tag: "start", workflow, input: null })
      let input: unknown
      try {
        input = JSON.parse(json)
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error)
        return Either.left(clip(`/workflow start: the input is not valid JSON (${why})`, MAX_ERROR_CHARS))
      }
      // Deeper JSON would overflow every recursive copy and check downstream; refuse it here.
      if (nestsDeeperThan(input, MAX_JSON_DEPTH)) {
        return Either.left(`/workflow start: ${tooDeep("the input")}`)
      }
      return Either.right({ _tag: "start", workflow, input })
    }
    case "status":
    case "cancel":
    case "pause":
    case "resume":
      if (restParts.length > 1) return Either.left(COMMAND_USAGE)
      return Either.right({ _tag: verb, runId: restParts[0] })
    default:
      return Either.left(`unknown subcommand ${quote(verb)}. ${COMMAND_USAGE}`)
  }
}
