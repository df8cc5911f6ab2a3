/**
 * The session runtime's logs leave through the one redactor: Effect's default logger (same
 * format, same destination), its every line passed through `redactText`, so a run error or a
 * store failure quoted in a warning carries no credential onto the terminal or into a log file.
 */
import { Logger } from "effect"
import { redactText } from "../domain/redact.ts"

export const redactedLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.withConsoleLog(Logger.map(Logger.stringLogger, redactText))
)
