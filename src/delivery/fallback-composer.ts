/**
 * An optional port that composes the fallback message for an intent. Without it the coordinator
 * sends the factual fallback of `fallback-message.ts`; the application provides one that adds
 * the terminal decision for runs that have ended (src/terminal/terminal-messages.ts). A composer
 * must be deterministic per intent and must never fail: it returns the plain fallback instead.
 */
import { Context, type Effect } from "effect"
import type { TurnIntent } from "../domain/turn-intent.ts"
import type { CustomMessage } from "../session/pi-session.ts"

export interface FallbackComposerService {
  readonly compose: (intent: TurnIntent) => Effect.Effect<CustomMessage>
}

export class FallbackComposer extends Context.Tag("pi-workflow-turns/FallbackComposer")<
  FallbackComposer,
  FallbackComposerService
>() {}
