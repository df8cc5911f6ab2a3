/**
 * The `serve` page: one HTML document whose script and style are separate routes (the CSP allows
 * nothing inline), fetched with the same access token. The token is base64url (guard.ts), so it
 * needs no escaping in an attribute. `PAGE_BUDGET` is what HTML, CSS and JS together may weigh
 * (docs/cli.md); a unit test holds the page to it.
 */
import { PAGE_SCRIPT } from "./page-script.ts"
import { PAGE_STYLE } from "./page-style.ts"

export { PAGE_SCRIPT, PAGE_STYLE }

/** Bytes of HTML + CSS + JS the page may weigh together. */
export const PAGE_BUDGET = 48 * 1024

export const pageHtml = (token: string): string => {
  const t = encodeURIComponent(token)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>pi-workflow-turns</title><link rel="icon" href="/favicon.ico?token=${t}">
<link rel="stylesheet" href="/app.css?token=${t}"></head>
<body><header><a href="#">pi-workflow-turns</a><span id="live"></span></header>
<main id="main"></main><script src="/app.js?token=${t}"></script></body></html>
`
}
