/** The page's style sheet (/app.css; the CSP allows no inline style). */
export const PAGE_STYLE = `:root{--ok:#2e7d32;--bad:#c62828;--warn:#e08600;--run:#1565c0;--mute:#777;font:14px/1.4 system-ui,sans-serif;color:#222;background:#fafafa}
body{margin:0}
header{display:flex;gap:1em;padding:.5em 1em;background:#263238}
header a{color:#fff;font-weight:600;text-decoration:none}
#live{color:#fff;font-size:12px;padding:0 8px;border-radius:9px;background:var(--ok)}
#live:empty{display:none}
main{padding:1em}
h1{font-size:18px}
h2{font-size:15px;margin:1.2em 0 .4em}
form{margin-bottom:1em}
input,select,button{font:inherit;margin-right:.6em}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #ddd;white-space:nowrap}
tr[data-run]{cursor:pointer}
tr[data-run]:hover{background:#eef4fb}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}
dt{color:var(--mute)}
dd{margin:0}
.rows{background:#fff;border:1px solid #ddd}
.row{display:grid;grid-template-columns:13em 1fr 28em;gap:8px;align-items:center;padding:3px 6px;border-bottom:1px solid #eee}
.row b{font-weight:400;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.row span{position:relative;height:16px;background:#eee;border-radius:3px;overflow:hidden}
.row small{color:#444;overflow-wrap:anywhere}
i{position:absolute;top:2px;bottom:2px;border-radius:3px}
i.m{top:0;bottom:0;width:2px}
.run{background:var(--run)}.ok{background:var(--ok)}.bad{background:var(--bad)}.warn{background:var(--warn)}.mute{background:var(--mute)}.done{background:#6a1b9a}
.c.completed{color:var(--ok)}
.c.failed,.c.timed_out,.c.cancelled,.c.orphaned,.c.parked{color:var(--bad)}
.c.running,.c.waiting,.c.waitingForAgent,.c.held,.c.paused,.c.queued{color:var(--warn)}
p.bad{background:none;color:var(--bad)}
p.mute{background:none;color:var(--mute)}
`
