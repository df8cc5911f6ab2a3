/**
 * `/workflow` command arguments for the user: `start <name> [json]`, `status [runId]`,
 * `cancel [runId]`, `pause [runId]`, `resume [runId]`, `list`. Pure parsing; the command handler acts.
 */
import { Either } from "effect"

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
      try {
        return Either.right({ _tag: "start", workflow, input: JSON.parse(json) as unknown })
      } catch (error) {
        return Either.left(
          `/workflow start: the input is not valid JSON (${error instanceof Error ? error.message : String(error)})`
        )
      }
    }
    case "status":
    case "cancel":
    case "pause":
    case "resume":
      if (restParts.length > 1) return Either.left(COMMAND_USAGE)
      return Either.right({ _tag: verb, runId: restParts[0] })
    default:
      return Either.left(`unknown subcommand "${verb}". ${COMMAND_USAGE}`)
  }
}
