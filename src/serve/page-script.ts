/**
 * The page's script (/app.js; the CSP allows no inline script). Plain browser JavaScript in a
 * string. It writes stored texts only as text nodes (never markup) and sends the token as a
 * Bearer header. A live run is polled every second; each poll rereads a kind from its first
 * unsettled item, at most 4 pages, and goes on after them on the next poll.
 */
export const PAGE_SCRIPT = `"use strict";
(() => {
const token = new URLSearchParams(location.search).get("token") || "";
const main = document.getElementById("main"), live = document.getElementById("live");
let gen = 0;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const nodes = (kids) => kids.flat(9).filter((k) => k != null && k !== false && k !== "");
const h = (tag, attrs, ...kids) => {
  const e = document.createElement(tag);
  for (const k in attrs) if (attrs[k] != null && attrs[k] !== false) e.setAttribute(k, attrs[k]);
  e.append(...nodes(kids));
  return e;
};
const get = async (path, params) => {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v != null && v !== ""));
  const res = await fetch(path + "?" + q, { headers: { Authorization: "Bearer " + token } });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error);
  return body;
};
const dur = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000)), m = Math.floor(s / 60), hr = Math.floor(m / 60);
  return s < 60 ? s + "s" : m < 60 ? m + "m" + (s % 60 ? " " + (s % 60) + "s" : "") : hr + "h" + (m % 60 ? " " + (m % 60) + "m" : "");
};
const ago = (now, t) => (t == null ? "-" : t <= now ? dur(now - t) + " ago" : "in " + dur(t - now));
const at = (t) => (t == null ? "-" : new Date(t).toISOString().slice(0, 19).replace("T", " "));
const link = (id) => h("a", { href: "#run=" + encodeURIComponent(id) }, id);
const go = (params) => { location.hash = new URLSearchParams(params); };
const STATES = "queued running waiting completed failed timed_out cancelled parked orphaned held paused".split(" ");

async function list(p, g) {
  const pick = (name, options) => h("select", { name }, h("option", { value: "" }, "any"),
    options.map((o) => h("option", { value: o, selected: p.get(name) === o }, o)));
  const text = (name) => h("input", { name, value: p.get(name) || "", size: 14 });
  const form = h("form", {}, "state ", pick("state", STATES), " workflow ", text("workflow"), " session ", text("session"),
    " age ", pick("age", ["1h", "24h", "7d", "30d"]), h("button", {}, "Filter"));
  form.onsubmit = (e) => { e.preventDefault(); go([...new FormData(form)].filter(([, v]) => v)); };
  const out = h("div");
  main.replaceChildren(h("h1", {}, "Workflow runs"), form, out);
  const q = Object.fromEntries(["state", "workflow", "session", "age"].map((k) => [k, p.get(k)]));
  for (; g === gen; await sleep(3000)) {
    try {
      const { now, runs } = await get("/api/runs", { ...q, limit: 100 });
      if (g !== gen) return;
      out.replaceChildren(runs.length === 0 ? "No workflow runs match." : h("table", {},
        h("tr", {}, "run workflow state node steps created updated session".split(" ").map((c) => h("th", {}, c))),
        runs.map((r) => {
          const tr = h("tr", { "data-run": r.id }, h("td", {}, link(r.id)), h("td", {}, r.workflow),
            h("td", { class: "c " + r.kind }, r.condition), h("td", {}, r.node || "-"), h("td", {}, r.steps + "/" + r.maxSteps),
            h("td", {}, ago(now, r.created)), h("td", {}, ago(now, r.updated)), h("td", {}, r.session));
          tr.onclick = () => go({ run: r.id });
          return tr;
        })));
    } catch (e) {
      out.replaceChildren(h("p", { class: "bad" }, e.message));
    }
  }
}

async function more(s, kind) {
  const items = s[kind];
  let keep = items.length, cursor = s.resume[kind];
  if (cursor == null) {
    keep = items.findIndex((x) => !x.final);
    if (keep < 0) keep = items.length;
    cursor = keep > 0 ? items[keep - 1].cursor : "";
  }
  let fresh = [], next = null;
  for (let i = 0; i < 4 && cursor != null; i++) {
    const page = await get("/api/" + kind, { id: s.id, cursor, limit: 200 });
    fresh = fresh.concat(page.items);
    next = cursor = page.next;
  }
  s[kind] = items.slice(0, keep).concat(fresh);
  return (s.resume[kind] = next) != null;
}

const TONE = { ok: "ok", failed: "bad", timed_out: "bad", cancelled: "bad", waiting: "warn", superseded: "mute", interrupted: "mute" };

function render(s) {
  const { run, now } = s;
  let t0 = run.created ?? now, t1 = run.ended ?? now;
  for (const t of [...s.steps.flatMap((x) => [x.start, x.end]), ...s.intents.flatMap((x) => [x.created, x.resolved]), ...s.events.map((x) => x.at)])
    if (t != null) { t0 = Math.min(t0, t); t1 = Math.max(t1, t); }
  const pct = (t) => Math.min(100, Math.max(0, ((t - t0) / Math.max(1, t1 - t0)) * 100));
  const bar = (cls, from, to, title) => {
    const e = h("i", { class: cls, title });
    e.style.left = pct(from) + "%";
    if (to != null) e.style.width = Math.max(0.3, pct(to) - pct(from)) + "%";
    return e;
  };
  const mark = (cls, t, title) => (t == null || t > t1 ? null : bar("m " + cls, t, null, title + " " + at(t)));
  const row = (attrs, label, marks, info) => h("div", { class: "row", ...attrs }, h("b", { title: label }, label),
    h("span", {}, marks), h("small", {}, info.filter(Boolean).join(" · ")));
  const steps = s.steps.map((x) => row({ "data-seq": x.seq, "data-node": x.node, "data-outcome": x.outcome, "data-taken-over": x.takenOver ? "yes" : null }, "#" + x.seq + " " + x.node,
    [bar("b " + (TONE[x.outcome] || "run"), x.start ?? now, x.end ?? now, x.outcome), mark("bad", x.deadline, "deadline"),
      x.reminders.map((r) => mark("warn", r.at, "reminder " + r.ordinal)), x.wait && mark("done", x.wait.answered, "answered")],
    [x.outcome, (x.end == null ? "for " : "took ") + dur((x.end ?? now) - (x.start ?? now)), "limit " + (x.limit == null ? "none" : dur(x.limit)),
      x.deadline != null && "deadline " + (x.end == null ? ago(now, x.deadline) : at(x.deadline)), x.note,
      x.wait && "asks: " + x.wait.question + (x.wait.answer ? " → " + x.wait.answer : ""), x.reminders.length && x.reminders.length + " reminder(s)",
      x.runner && (x.takenOver ? "taken over: " : "on ") + x.runner]));
  const intents = s.intents.map((x) => row({ "data-intent": x.id, "data-resolution": x.resolution }, x.cause + (x.node ? " @ " + x.node : ""),
    [bar("b " + (x.resolved ? "ok" : "warn"), x.created ?? now, x.resolved ?? now, x.cause), mark("run", x.eligible, "eligible"), mark("done", x.resolved, "resolved")],
    ["created " + at(x.created), "eligible " + at(x.eligible), x.resolved ? "resolved by " + x.resolution + " (message " + x.message + ")"
      : x.claimedUntil ? "claimed until " + at(x.claimedUntil) : x.eligible ? "eligible" : "pending"]));
  const events = s.events.map((x) => row({ "data-event": x.kind }, x.kind, [mark("run", x.at, x.kind)], [at(x.at), x.text]));
  const part = (title, rows, kind) => [h("h2", {}, title + " (" + rows.length + (s.resume[kind] != null ? "+" : "") + ")"),
    rows.length ? h("div", { class: "rows" }, rows) : h("p", { class: "mute" }, "none")];
  const fields = [["state", h("span", { class: "c " + run.kind }, run.condition)], ["workflow", run.workflow], ["node", run.node || "-"],
    ["steps", run.steps + " settled of " + run.maxSteps], ["session", run.session], ["claims", String(run.claims)], ["created", at(run.created)],
    ["ended", at(run.ended)], ["interruption", run.interruption], ["end", run.end], ["error", run.error && h("span", { class: "c failed" }, run.error)]];
  main.replaceChildren(...nodes([h("a", { href: "#" }, "← all runs"), h("h1", {}, "Run " + run.id),
    h("dl", {}, fields.filter(([, v]) => v != null).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    s.chain.length === 0 ? null : [h("h2", {}, "Restart chain"), h("ol", {}, s.chain.map((c) =>
      h("li", {}, c.id === run.id ? h("b", {}, c.id) : link(c.id), " " + c.relation + (c.note ? ": " + c.note : ""))))],
    h("p", { class: "mute" }, "Bars run from start to end; marks: red deadline, orange reminder, blue eligible, purple answered or resolved. From ",
      at(t0), " to ", run.ended == null ? "now" : at(t1), "."),
    part("Steps", steps, "steps"), part("Turn intents", intents, "intents"), part("Events", events, "events")]));
}

async function timeline(id, g) {
  const s = { id, steps: [], intents: [], events: [], resume: {} };
  for (let wait = 0; g === gen; await sleep(wait)) {
    try {
      Object.assign(s, await get("/api/run", { id }));
      let pending = false;
      for (const kind of ["steps", "intents", "events"]) pending = (await more(s, kind)) || pending;
      if (g !== gen) return;
      render(s);
      live.textContent = s.run.ended == null ? "live" : "";
      if (s.run.ended != null && !pending) return;
      wait = pending ? 0 : 1000;
    } catch (e) {
      if (g === gen) main.replaceChildren(h("p", { class: "bad" }, e.message));
      wait = 3000;
    }
  }
}

const route = () => {
  const g = ++gen, p = new URLSearchParams(location.hash.slice(1));
  live.textContent = "";
  (p.get("run") ? timeline(p.get("run"), g) : list(p, g)).catch((e) => main.replaceChildren(String(e)));
};
addEventListener("hashchange", route);
route();
})();
`
