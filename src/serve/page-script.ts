/**
 * The `serve` page's script, served as /app.js (no inline script: the CSP allows only 'self').
 * Plain browser JavaScript in a string, so esbuild bundles it into the CLI as it is. It builds
 * the DOM with textContent only (never innerHTML: every stored text stays text), sends the token
 * as a Bearer header, and follows a live run by polling every second. Paging: a kind's items are
 * read a page at a time; each poll rereads from its first unsettled item (a step in flight, an
 * unresolved intent), at most MAX_PAGES pages, and goes on after them on the next poll.
 */
export const PAGE_SCRIPT = `"use strict";
(() => {
const token = new URLSearchParams(location.search).get("token") || "";
const main = document.getElementById("main");
const live = document.getElementById("live");
const PAGE = 200, MAX_PAGES = 4, POLL = 1000;
let generation = 0;

const el = (tag, props, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "on") for (const [name, f] of Object.entries(v)) e.addEventListener(name, f);
    else e.setAttribute(k, String(v));
  }
  for (const kid of kids.flat(Infinity)) if (kid !== null && kid !== undefined && kid !== false && kid !== "") e.append(kid);
  return e;
};

const api = async (path, params) => {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") query.set(k, String(v));
  const res = await fetch(path + "?" + query, { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || "HTTP " + res.status);
  return body;
};

const dur = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60), h = Math.floor(m / 60), d = Math.floor(h / 24);
  if (d > 0) return d + "d" + (h % 24 ? " " + (h % 24) + "h" : "");
  if (h > 0) return h + "h" + (m % 60 ? " " + (m % 60) + "m" : "");
  return m + "m" + (s % 60 ? " " + (s % 60) + "s" : "");
};
const ago = (now, at) => (at === null ? "-" : at <= now ? dur(now - at) + " ago" : "in " + dur(at - now));
const stamp = (at) => (at === null ? "-" : new Date(at).toISOString().replace("T", " ").slice(0, 19));
const short = (id) => (id.length > 22 ? id.slice(0, 21) + "…" : id);
const runLink = (id, text) => el("a", { href: "#" + new URLSearchParams({ run: id }) }, text || short(id));
const go = (params) => { location.hash = new URLSearchParams(params).toString(); };
const fail = (error) => main.replaceChildren(el("p", { class: "error" }, String((error && error.message) || error)));

const STATES = ["queued", "running", "waiting", "completed", "failed", "timed_out", "cancelled", "parked", "orphaned", "held", "paused"];
const AGES = [["1h", "last hour"], ["24h", "last day"], ["7d", "last week"], ["30d", "last month"]];
const field = (name, control) => el("label", {}, name, control);
const select = (name, choices, any, value) =>
  el("select", { name }, el("option", { value: "" }, any),
    choices.map(([v, text]) => el("option", { value: v, selected: v === value }, text)));

async function list(params, gen) {
  const form = el("form", { class: "filters" },
    field("state", select("state", STATES.map((s) => [s, s]), "any state", params.get("state"))),
    field("workflow", el("input", { name: "workflow", value: params.get("workflow") || "", size: 14 })),
    field("session", el("input", { name: "session", value: params.get("session") || "", size: 14, placeholder: "ID or prefix" })),
    field("age", select("age", AGES, "any age", params.get("age"))),
    el("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go([...new FormData(form)].filter(([, v]) => v !== ""));
  });
  const result = el("div", {}, el("p", {}, "Loading…"));
  main.replaceChildren(el("h1", {}, "Workflow runs"), form, result);
  const query = Object.fromEntries(["state", "workflow", "session", "age"].map((k) => [k, params.get(k)]));
  const refresh = async () => {
    if (gen !== generation) return;
    try {
      const body = await api("/api/runs", { ...query, limit: 100 });
      if (gen !== generation) return;
      const head = ["run", "workflow", "state", "node", "steps", "created", "updated", "session"];
      result.replaceChildren(body.runs.length === 0 ? el("p", {}, "No workflow runs match.") :
        el("table", { class: "runs" }, el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
          el("tbody", {}, body.runs.map((run) =>
            el("tr", { "data-run": run.id, "data-state": run.kind, class: "k-" + run.kind, on: { click: () => go({ run: run.id }) } },
              el("td", {}, runLink(run.id)), el("td", {}, run.workflow), el("td", { class: "cond" }, run.condition),
              el("td", {}, run.node || "-"), el("td", {}, run.steps + "/" + run.maxSteps),
              el("td", {}, ago(body.now, run.created)), el("td", {}, ago(body.now, run.updated)),
              el("td", {}, short(run.session)))))));
    } catch (error) {
      result.replaceChildren(el("p", { class: "error" }, String(error.message)));
    }
    setTimeout(refresh, 3 * POLL);
  };
  await refresh();
}

async function advance(state, kind) {
  const items = state.items[kind];
  const resume = state.resume[kind];
  let keep = items.length, cursor = resume;
  if (resume === null) {
    const first = items.findIndex((item) => !item.final);
    keep = first < 0 ? items.length : first;
    cursor = keep > 0 ? items[keep - 1].cursor : "";
  }
  const fresh = [];
  let next = null;
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = await api("/api/" + kind, { id: state.id, cursor, limit: PAGE });
    fresh.push(...page.items);
    next = page.next;
    if (next === null) break;
    cursor = next;
  }
  state.items[kind] = items.slice(0, keep).concat(fresh);
  state.resume[kind] = next;
  return next !== null;
}

const axisOf = (state) => {
  const { run, now } = state;
  let t0 = run.created ?? now, t1 = run.ended ?? now;
  const see = (t) => { if (t !== null && t !== undefined) { t0 = Math.min(t0, t); t1 = Math.max(t1, t); } };
  for (const s of state.items.steps) { see(s.start); see(s.end); }
  for (const i of state.items.intents) { see(i.created); see(i.resolved); }
  const span = Math.max(1, t1 - t0);
  return { t0, t1, at: (t) => Math.min(100, Math.max(0, ((t - t0) / span) * 100)) };
};

const placed = (cls, axis, from, to, title) => {
  const e = el("div", { class: cls, title });
  e.style.left = axis.at(from) + "%";
  if (to !== undefined) e.style.width = Math.max(0.3, axis.at(to) - axis.at(from)) + "%";
  return e;
};

const row = (attrs, label, track, info) =>
  el("div", { class: "row", ...attrs }, el("div", { class: "label", title: label }, label), el("div", { class: "track" }, track), el("div", { class: "info", title: info.join(" · ") }, info.join(" · ")));

const stepRow = (s, axis, now) => {
  const end = s.end ?? now;
  const marks = [placed("bar o-" + s.outcome.replace(" ", "-"), axis, s.start ?? now, end, s.outcome + ", " + stamp(s.start) + " → " + stamp(s.end))];
  if (s.deadline !== null && s.deadline <= axis.t1) marks.push(placed("mark deadline", axis, s.deadline, undefined, "deadline " + stamp(s.deadline)));
  for (const r of s.reminders) if (r.at !== null) marks.push(placed("mark reminder", axis, r.at, undefined, "reminder " + r.ordinal + " " + stamp(r.at)));
  if (s.wait && s.wait.answered !== null) marks.push(placed("mark answer", axis, s.wait.answered, undefined, "answered " + stamp(s.wait.answered)));
  const info = [s.outcome, (s.end === null ? "for " : "took ") + dur(end - (s.start ?? end)), "limit " + (s.limit === null ? "none" : dur(s.limit))];
  if (s.deadline !== null) info.push("deadline " + (s.end === null ? ago(now, s.deadline) : stamp(s.deadline)));
  if (s.note) info.push(s.note);
  if (s.wait) info.push("asks: " + s.wait.question + (s.wait.answer === null ? "" : " → " + s.wait.answer));
  if (s.reminders.length) info.push(s.reminders.length + " reminder(s)");
  return row({ "data-seq": s.seq, "data-outcome": s.outcome, "data-node": s.node }, "#" + s.seq + " " + s.node, marks, info);
};

const intentStage = (i, now) =>
  i.resolved !== null ? "resolved by " + i.resolution + (i.message ? " (message " + i.message + ")" : "")
    : i.claimedUntil !== null ? (i.claimedUntil > now ? "claimed" : "claim expired")
    : i.eligible !== null ? "eligible" : "pending";

const intentRow = (i, axis, now) => {
  const marks = [placed("bar " + (i.resolved !== null ? "o-ok" : "o-waiting"), axis, i.created ?? now, i.resolved ?? now, i.cause)];
  if (i.eligible !== null) marks.push(placed("mark eligible", axis, i.eligible, undefined, "eligible " + stamp(i.eligible)));
  if (i.resolved !== null) marks.push(placed("mark answer", axis, i.resolved, undefined, "resolved " + stamp(i.resolved)));
  const info = ["created " + stamp(i.created), "eligible " + stamp(i.eligible), intentStage(i, now)];
  return row({ "data-intent": i.id, "data-resolution": i.resolution || "" }, i.cause + (i.node ? " @ " + i.node : ""), marks, info);
};

const eventRow = (e, axis) =>
  row({ "data-event": e.kind }, e.kind, e.at === null ? [] : [placed("mark event", axis, e.at, undefined, stamp(e.at))], [stamp(e.at), e.text]);

const section = (title, rows, empty, more) =>
  [el("h2", {}, title + " (" + rows.length + (more ? "+" : "") + ")"), rows.length ? el("div", { class: "rows" }, rows) : el("p", { class: "mute" }, empty)];

const render = (state) => {
  const { run, now, chain } = state;
  const axis = axisOf(state);
  const fields = [["state", el("span", { class: "cond", "data-state": run.kind }, run.condition)], ["workflow", run.workflow], ["node", run.node || "-"],
    ["steps", run.steps + " settled of " + run.maxSteps], ["session", run.session], ["claims", String(run.claims)],
    ["created", stamp(run.created)], ["started", stamp(run.started)], ["ended", stamp(run.ended)]];
  if (run.interruption) fields.push(["interruption", run.interruption]);
  if (run.end) fields.push(["end", run.end]);
  if (run.error) fields.push(["error", el("span", { class: "error" }, run.error)]);
  main.replaceChildren(...[
    el("p", {}, el("a", { href: "#" }, "← all runs")),
    el("h1", { class: "k-" + run.kind }, "Run " + run.id),
    el("dl", {}, fields.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    chain.length ? [el("h2", {}, "Restart chain"), el("ol", { class: "chain" }, chain.map((c) =>
      el("li", {}, c.id === run.id ? el("strong", {}, short(c.id)) : runLink(c.id), " " + c.relation + (c.note ? ": " + c.note : ""))))] : [],
    el("p", { class: "mute" }, "Bars run from start to end: green ok, red failed, timed out or cancelled, grey taken over or interrupted, orange waiting, blue in flight. Marks: red deadline, orange reminder, blue eligible, purple answered or resolved."),
    el("div", { class: "row axis" }, el("div"), el("div", { class: "ends" }, el("span", {}, stamp(axis.t0)), el("span", {}, run.ended === null ? "now" : stamp(axis.t1))), el("div")),
    section("Steps", state.items.steps.map((s) => stepRow(s, axis, now)), "No steps yet.", state.resume.steps !== null),
    section("Turn intents", state.items.intents.map((i) => intentRow(i, axis, now)), "No turn intents.", state.resume.intents !== null),
    section("Events", state.items.events.map((e) => eventRow(e, axis)), "No events.", state.resume.events !== null)].flat(Infinity));
};

async function timeline(id, gen) {
  const state = { id, run: null, chain: [], now: 0, items: { steps: [], intents: [], events: [] }, resume: { steps: null, intents: null, events: null } };
  main.replaceChildren(el("p", {}, "Loading…"));
  const tick = async () => {
    if (gen !== generation) return;
    try {
      const head = await api("/api/run", { id });
      Object.assign(state, head);
      let more = false;
      for (const kind of ["steps", "intents", "events"]) more = (await advance(state, kind)) || more;
      if (gen !== generation) return;
      render(state);
      live.textContent = state.run.ended === null ? "live" : "";
      if (state.run.ended === null || more) setTimeout(tick, more ? 0 : POLL);
    } catch (error) {
      if (gen !== generation) return;
      fail(error);
      setTimeout(tick, 3 * POLL);
    }
  };
  await tick();
}

const route = () => {
  const gen = ++generation;
  live.textContent = "";
  const params = new URLSearchParams(location.hash.slice(1));
  const id = params.get("run");
  (id ? timeline(id, gen) : list(params, gen)).catch(fail);
};
addEventListener("hashchange", route);
route();
})();
`
