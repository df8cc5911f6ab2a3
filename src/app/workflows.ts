/**
 * From discovered workflow files to registry entries. Each file is validated on its own: a
 * broken or invalid file becomes one clear load error naming it, and the others still load.
 */
import { Effect, Either } from "effect"
import type { WrappedEntry } from "../engine/registry.ts"
import { loadWorkflow } from "../engine/validate.ts"

/**
 * One project workflow file as the application receives it: the module's default export (not yet
 * validated) with the hash of its source, or why it could not be loaded. The Pi adapter reads the
 * files (extension/workflow-files.ts); the application registers what they define.
 */
export type LoadedFile =
  | { readonly _tag: "Loaded"; readonly file: string; readonly value: unknown; readonly sourceHash: string }
  | { readonly _tag: "LoadError"; readonly file: string; readonly message: string }

export interface WorkflowSet {
  readonly entries: ReadonlyArray<WrappedEntry>
  /** One line per file that could not be used, naming the file and the problem. */
  readonly errors: ReadonlyArray<string>
}

/** Built-ins first, then project files; a later file reusing a loaded name is an error. */
export const collectWorkflows = (
  builtins: ReadonlyArray<WrappedEntry>,
  files: ReadonlyArray<LoadedFile>
): WorkflowSet => {
  const entries: WrappedEntry[] = [...builtins]
  const errors: string[] = []
  const names = new Map<string, string>()
  for (const entry of builtins) {
    const loaded = Effect.runSync(Effect.either(loadWorkflow(entry.definition)))
    if (Either.isRight(loaded)) names.set(loaded.right.name, entry.origin ?? "built-in")
  }
  for (const file of files) {
    if (file._tag === "LoadError") {
      errors.push(file.message)
      continue
    }
    const loaded = Effect.runSync(Effect.either(loadWorkflow(file.value)))
    if (Either.isLeft(loaded)) {
      errors.push(`${file.file}: ${loaded.left.message}`)
      continue
    }
    const name = loaded.right.name
    const previous = names.get(name)
    if (previous !== undefined) {
      errors.push(`${file.file}: workflow "${name}" is already defined by ${previous}`)
      continue
    }
    names.set(name, file.file)
    entries.push({ definition: file.value, sourceHash: file.sourceHash, origin: file.file })
  }
  return { entries, errors }
}
