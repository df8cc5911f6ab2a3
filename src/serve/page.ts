/**
 * The page: one HTML document whose script and style are routes of their own (the CSP allows
 * nothing inline), asked for with the same token (base64url: no escaping needed). HTML, CSS and
 * JS together weigh at most PAGE_BUDGET bytes (docs/cli.md; a unit test holds it).
 */
export { PAGE_SCRIPT } from "./page-script.ts"
export { PAGE_STYLE } from "./page-style.ts"

export const PAGE_BUDGET = 48 * 1024

export const pageHtml = (token: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pi-workflow-turns</title>
<link rel="icon" href="/favicon.ico?token=${token}"><link rel="stylesheet" href="/app.css?token=${token}"></head>
<body><header><a href="#">pi-workflow-turns</a><span id="live"></span></header>
<main id="main"></main><script src="/app.js?token=${token}"></script></body></html>
`
