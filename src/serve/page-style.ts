/** The `serve` page's style sheet, served as /app.css (no inline style: the CSP allows only 'self'). */
export const PAGE_STYLE = `:root{--ok:#2e7d32;--bad:#c62828;--warn:#e08600;--info:#1565c0;--mute:#777;font:14px/1.4 system-ui,sans-serif;color:#222;background:#fafafa}
body{margin:0}
header{display:flex;gap:1em;align-items:center;padding:.5em 1em;background:#263238;color:#fff}
header a{color:#fff;font-weight:600;text-decoration:none}
#live{font-size:12px;padding:0 8px;border-radius:9px;background:var(--ok)}
#live:empty{display:none}
main{padding:1em}
h1{font-size:18px;margin:.2em 0 .6em}
h2{font-size:15px;margin:1.2em 0 .4em}
.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:end;margin-bottom:1em}
.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--mute)}
input,select,button{font:inherit;padding:2px 6px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e3e3e3;white-space:nowrap}
tbody tr{cursor:pointer}
tbody tr:hover{background:#eef4fb}
.k-completed .cond,.cond[data-state=completed]{color:var(--ok)}
.k-failed .cond,.k-timed_out .cond,.k-cancelled .cond,.k-orphaned .cond,.k-parked .cond,.cond[data-state=failed],.cond[data-state=timed_out],.cond[data-state=cancelled],.cond[data-state=orphaned],.cond[data-state=parked]{color:var(--bad)}
.k-running .cond,.k-waiting .cond,.k-waitingForAgent .cond,.cond[data-state=running],.cond[data-state=waiting],.cond[data-state=waitingForAgent]{color:var(--warn)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
dt{color:var(--mute)}
dd{margin:0}
.rows{background:#fff;border:1px solid #e3e3e3}
.row{display:grid;grid-template-columns:13em 1fr 28em;gap:8px;align-items:center;padding:3px 6px;border-bottom:1px solid #f0f0f0}
.label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.info{font-size:12px;color:#444;overflow-wrap:anywhere}
.track{position:relative;height:16px;background:#f1f1f1;border-radius:3px;overflow:hidden}
.bar{position:absolute;top:2px;bottom:2px;border-radius:3px;background:var(--info)}
.mark{position:absolute;top:0;bottom:0;width:2px;margin-left:-1px;background:#333}
.o-ok{background:var(--ok)}
.o-failed,.o-timed_out,.o-cancelled{background:var(--bad)}
.o-interrupted,.o-superseded{background:var(--mute)}
.o-waiting{background:var(--warn)}
.deadline{background:var(--bad)}
.reminder{background:var(--warn)}
.answer{background:#6a1b9a}
.eligible{background:var(--info)}
.axis{border:0}
.ends{display:flex;justify-content:space-between;font-size:11px;color:var(--mute)}
.error{color:var(--bad)}
.mute{color:var(--mute)}
.chain{margin:0;padding-left:1.4em}
`
