/** Registers the deferred-turn card with Pi's TUI (no effect in RPC/print modes). */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent"
import { Box, Text } from "@earendil-works/pi-tui"
import { type CardTone, cardLines, DEFERRED_TURN_TYPE } from "./deferred-turn-card.ts"

export const registerDeferredTurnRenderer = (pi: ExtensionAPI): void => {
  pi.registerMessageRenderer(DEFERRED_TURN_TYPE, (message, { expanded, outputPad }, theme) => {
    const paint = (tone: CardTone, text: string) => (tone === "text" ? text : theme.fg(tone, text))
    const text = cardLines(message, expanded)
      .map((line) => paint(line.tone, line.text))
      .join("\n")
    const box = new Box(outputPad, 1, (t: string) => theme.bg("customMessageBg", t))
    box.addChild(new Text(text, 0, 0))
    return box
  })
}
