/**
 * One project workflow file as the application receives it: the module's default export (not yet
 * validated) with the hash of its source, or why it could not be loaded. The Pi adapter reads the
 * files (extension/workflow-files.ts); the application registers what they define.
 */
export type LoadedFile =
  | { readonly _tag: "Loaded"; readonly file: string; readonly value: unknown; readonly sourceHash: string }
  | { readonly _tag: "LoadError"; readonly file: string; readonly message: string }
