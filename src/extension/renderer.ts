/**
 * Registers the extension's message cards with Pi's TUI (no effect in RPC/print modes): the
 * workflow turn card for deferred turns and presentations (whose terminal decision block would
 * otherwise fill the screen), the step card and the one-line notification, so no raw message
 * type is ever shown. Rendering only draws; it never adds an entry or starts a turn.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { Box, Text } from "@earendil-works/pi-tui"
import {
  AGENT_STEP_TYPE,
  DEFERRED_TURN_TYPE,
  NOTIFICATION_TYPE,
  PRESENTATION_TYPE
} from "../domain/message-types.ts"
import { type CardLine, type CardTone, cardLines } from "./deferred-turn-card.ts"
import { notificationLines, stepCardLines } from "./step-cards.ts"

/** The message types drawn as a card. */
export const CARD_TYPES = [DEFERRED_TURN_TYPE, PRESENTATION_TYPE] as const

type Renderer = Parameters<ExtensionAPI["registerMessageRenderer"]>[1]

type Lines = (message: Parameters<Renderer>[0], expanded: boolean) => ReadonlyArray<CardLine>

const renderWith =
  (lines: Lines): Renderer =>
  (message, { expanded, outputPad }, theme) => {
    const paint = (tone: CardTone, text: string) => (tone === "text" ? text : theme.fg(tone, text))
    const text = lines(message, expanded)
      .map((line) => paint(line.tone, line.text))
      .join("\n")
    const box = new Box(outputPad, 1, (t: string) => theme.bg("customMessageBg", t))
    box.addChild(new Text(text, 0, 0))
    return box
  }

/** Every message type the extension shows in the session, with the lines it is drawn as. */
export const RENDERERS: ReadonlyArray<readonly [string, Lines]> = [
  ...CARD_TYPES.map((type) => [type, cardLines] as const),
  [AGENT_STEP_TYPE, stepCardLines],
  [NOTIFICATION_TYPE, notificationLines]
]

export const registerDeferredTurnRenderer = (pi: ExtensionAPI): void => {
  for (const [type, lines] of RENDERERS) pi.registerMessageRenderer(type, renderWith(lines))
}
