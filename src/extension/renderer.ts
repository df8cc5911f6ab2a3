/**
 * Registers the workflow turn card with Pi's TUI (no effect in RPC/print modes): once for
 * deferred turns and once for presentations, whose terminal decision block would otherwise
 * fill the screen. Rendering only draws; it never adds an entry or starts a turn.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { Box, Text } from "@earendil-works/pi-tui"
import { PRESENTATION_TYPE } from "../engine/messages.ts"
import { type CardTone, cardLines, DEFERRED_TURN_TYPE } from "./deferred-turn-card.ts"

/** The message types drawn as a card. */
export const CARD_TYPES = [DEFERRED_TURN_TYPE, PRESENTATION_TYPE] as const

type Renderer = Parameters<ExtensionAPI["registerMessageRenderer"]>[1]

const render: Renderer = (message, { expanded, outputPad }, theme) => {
  const paint = (tone: CardTone, text: string) => (tone === "text" ? text : theme.fg(tone, text))
  const text = cardLines(message, expanded)
    .map((line) => paint(line.tone, line.text))
    .join("\n")
  const box = new Box(outputPad, 1, (t: string) => theme.bg("customMessageBg", t))
  box.addChild(new Text(text, 0, 0))
  return box
}

export const registerDeferredTurnRenderer = (pi: ExtensionAPI): void => {
  for (const type of CARD_TYPES) pi.registerMessageRenderer(type, render)
}
