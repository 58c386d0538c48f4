// kmock console: a page per hash route, drawn from the broker's JSON API under /v1.
// Plain DOM and fetch, no framework and no build step; the timeline chart is SVG drawn here.
"use strict";

const $main = () => document.getElementById("main");
let follow = null; // the AbortController of a live message follow, while one runs

// --- helpers ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function table(headers, rows, attrs) {
  return el("table", attrs || {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: /^(#|offset|lag|size|messages|partitions|members|epoch|committed|high watermark|log start|new offset|current offset|generation)$/i.test(h) ? "num" : null }, h)))),
    el("tbody", {}, rows.length
      ? rows.map((r) => r instanceof Node ? r : el("tr", {}, r.map((c) => (c instanceof Node && c.tagName === "TD") ? c : el("td", {}, c))))
      : el("tr", {}, el("td", { class: "muted", colspan: String(headers.length) }, "none"))));
}

function num(v) { return el("td", { class: "num" }, v === null || v === undefined ? "–" : String(v)); }
function when(ms) { return ms === null || ms === undefined || ms < 0 ? "–" : new Date(ms).toISOString(); }
function bytes(n) {
  if (n < 1024) return n + " B";
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let i = -1;
  do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
  return n.toFixed(1) + " " + units[i];
}
const enc = encodeURIComponent;

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}
function showNotice(message) {
  const box = document.getElementById("notice");
  box.textContent = message;
  box.hidden = !message;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error : "HTTP " + status);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body, signal) {
  const init = { method, signal, headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Runs an action; an API error becomes the message at the top of the page.
async function guard(action) {
  showError("");
  try {
    return await action();
  } catch (e) {
    if (e.name === "AbortError") return undefined;
    showError(e.body && e.body.error_code ? `${e.message} (${e.body.error_code})` : e.message);
    return undefined;
  }
}

function formValues(form) {
  const out = {};
  for (const [k, v] of new FormData(form).entries()) out[k] = typeof v === "string" ? v.trim() : v;
  return out;
}

function pager(total, offset, limit, go) {
  const last = Math.min(total, offset + limit);
  return el("div", { class: "bar" },
    el("button", { type: "button", "data-testid": "prev", disabled: offset <= 0, onclick: () => go(Math.max(0, offset - limit)) }, "‹ Previous"),
    el("span", { class: "muted" }, total ? `${offset + 1}–${last} of ${total}` : "none"),
    el("button", { type: "button", "data-testid": "next", disabled: last >= total, onclick: () => go(offset + limit) }, "Next ›"));
}

// --- routing ---------------------------------------------------------------------------

const routes = [
  [/^#\/brokers$/, pageBrokers],
  [/^#\/topics$/, pageTopics],
  [/^#\/topics\/([^/]+)$/, pageTopic],
  [/^#\/topics\/([^/]+)\/messages$/, pageMessages],
  [/^#\/groups$/, pageGroups],
  [/^#\/groups\/([^/]+)$/, pageGroup],
  [/^#\/groups\/([^/]+)\/timeline$/, pageTimeline],
  [/^#\/controls$/, pageControls],
];

async function route() {
  if (follow) { follow.abort(); follow = null; }
  showError("");
  showNotice("");
  const hash = location.hash.split("?")[0] || "#/topics";
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", hash.startsWith("#/" + a.dataset.page));
  }
  for (const [pattern, page] of routes) {
    const m = hash.match(pattern);
    if (m) {
      const main = $main();
      main.replaceChildren(el("p", { class: "muted" }, "Loading…"));
      await guard(() => page(main, ...m.slice(1).map(decodeURIComponent)));
      return;
    }
  }
  location.hash = "#/topics";
}

function query() {
  const q = location.hash.split("?")[1] || "";
  return new URLSearchParams(q);
}

function setQuery(params) {
  const base = location.hash.split("?")[0];
  const q = new URLSearchParams(params).toString();
  history.replaceState(null, "", base + (q ? "?" + q : ""));
}

// --- brokers ---------------------------------------------------------------------------

async function pageBrokers(main) {
  const data = await api("GET", "/v1/brokers");
  main.replaceChildren(
    el("h2", {}, "Brokers"),
    el("div", { class: "cards" },
      el("div", { class: "card" }, el("div", { class: "k" }, "cluster id"), el("div", { class: "v", "data-testid": "cluster-id" }, data.cluster_id)),
      el("div", { class: "card" }, el("div", { class: "k" }, "controller"), el("div", { class: "v" }, data.controller_id))),
    table(["node id", "host", "port", "listeners", "log dirs", "ready"],
      data.brokers.map((b) => [b.node_id, b.host, b.port,
        b.listeners.map((l) => `${l.name} (${l.security_protocol}) ${l.advertised || ""}`).join(", "),
        b.log_dirs.join(", "), b.ready ? "yes" : "replaying"]), { "data-testid": "brokers" }));
}

// --- topics ----------------------------------------------------------------------------

const TOPIC_PAGE = 50;

async function pageTopics(main) {
  const q = query();
  const filter = q.get("filter") || "";
  const offset = Number(q.get("offset") || 0);
  const data = await api("GET", `/v1/topics?filter=${enc(filter)}&offset=${offset}&limit=${TOPIC_PAGE}`);
  const reload = (params) => { setQuery(params); route(); };
  const search = el("form", { "data-testid": "topic-filter", onsubmit: (e) => { e.preventDefault(); reload({ filter: formValues(e.target).filter, offset: 0 }); } },
    el("label", {}, "Filter", el("input", { name: "filter", value: filter, placeholder: "part of a name" })),
    el("button", { type: "submit" }, "Filter"));
  const create = el("form", { "data-testid": "create-topic", onsubmit: (e) => { e.preventDefault(); createTopic(e.target); } },
    el("label", {}, "Name", el("input", { name: "name", required: true })),
    el("label", {}, "Partitions", el("input", { name: "partitions", type: "number", value: "1" })),
    el("label", {}, "Configs (name=value, one a line)", el("textarea", { name: "configs", rows: "2", cols: "30" })),
    el("button", { type: "submit", class: "primary" }, "Create topic"));
  main.replaceChildren(
    el("h2", {}, "Topics"), search,
    table(["name", "partitions", "messages", "size", "internal"],
      data.topics.map((t) => [el("a", { href: `#/topics/${enc(t.name)}` }, t.name), num(t.partitions), num(t.messages), num(bytes(t.size_bytes)), t.internal ? "yes" : ""]),
      { "data-testid": "topics" }),
    pager(data.total, offset, TOPIC_PAGE, (o) => reload({ filter, offset: o })),
    el("h3", {}, "Create a topic"), create);
}

async function createTopic(form) {
  const v = formValues(form);
  const configs = {};
  for (const line of (v.configs || "").split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf("=");
    if (at < 1) { showError(`configs: expected name=value, not ${JSON.stringify(line)}`); return; }
    configs[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  const partitions = v.partitions === "" ? -1 : Number(v.partitions);
  if (!Number.isInteger(partitions)) { showError(`partitions: expected a whole number, not ${JSON.stringify(v.partitions)}`); return; }
  await guard(async () => {
    const done = await api("POST", "/v1/topics", { name: v.name, partitions, configs });
    location.hash = `#/topics/${enc(done.created.name)}`;
    showNotice(`Created topic ${done.created.name} with ${done.created.partitions} partition(s).`);
  });
}

async function pageTopic(main, name) {
  const t = await api("GET", `/v1/topics/${enc(name)}`);
  let armed = false;
  const del = el("button", { type: "button", class: "danger", "data-testid": "delete-topic" }, "Delete topic");
  del.addEventListener("click", () => guard(async () => {
    if (!armed) { armed = true; del.textContent = `Really delete ${name}?`; return; }
    await api("DELETE", `/v1/topics/${enc(name)}`);
    location.hash = "#/topics";
    showNotice(`Deleted topic ${name}.`);
  }));
  main.replaceChildren(
    el("h2", {}, "Topic ", el("span", { "data-testid": "topic-name" }, t.name)),
    el("div", { class: "cards" },
      el("div", { class: "card" }, el("div", { class: "k" }, "partitions"), el("div", { class: "v" }, t.partitions)),
      el("div", { class: "card" }, el("div", { class: "k" }, "messages"), el("div", { class: "v" }, t.messages)),
      el("div", { class: "card" }, el("div", { class: "k" }, "size on disk"), el("div", { class: "v" }, bytes(t.size_bytes))),
      el("div", { class: "card" }, el("div", { class: "k" }, "topic id"), el("div", { class: "v" }, t.topic_id))),
    el("div", { class: "bar" }, el("a", { href: `#/topics/${enc(name)}/messages`, "data-testid": "browse" }, "Browse messages →"), t.internal ? null : del),
    el("h3", {}, "Partitions"),
    table(["partition", "log start", "high watermark", "messages", "size", "segments"],
      t.partition_list.map((p) => [num(p.partition), num(p.log_start_offset), num(p.high_watermark), num(p.messages), num(bytes(p.size_bytes)), num(p.segments)]),
      { "data-testid": "partitions" }),
    el("h3", {}, "Configs"),
    table(["name", "value", "source"], t.configs.map((c) => [c.name, c.value === null ? "–" : c.value, el("span", { class: "badge" }, c.source)])));
}

// --- messages --------------------------------------------------------------------------

function shown(v) {
  if (v === null || v === undefined) return el("span", { class: "muted" }, "null");
  const text = v.encoding === "json" ? JSON.stringify(v.data, null, 1) : String(v.data);
  return el("div", {}, el("span", { class: "badge" }, v.encoding + (v.truncated ? ", cut" : "")), el("pre", {}, text));
}

function messageRow(m) {
  return el("tr", { "data-offset": m.offset },
    num(m.offset), el("td", {}, when(m.timestamp), el("div", { class: "muted" }, m.timestamp_type + (m.transactional ? ", transactional" : ""))),
    el("td", {}, shown(m.key)), el("td", {}, shown(m.value)),
    el("td", {}, m.headers.map((h) => el("div", {}, el("b", {}, h.key + ": "), shown(h.value)))));
}

async function pageMessages(main, name) {
  const topic = await api("GET", `/v1/topics/${enc(name)}`);
  const q = query();
  const form = el("form", { "data-testid": "message-form" },
    el("label", {}, "Partition", el("select", { name: "partition" }, topic.partition_list.map((p) => el("option", { value: p.partition, selected: String(p.partition) === (q.get("partition") || "0") }, `${p.partition} (${p.log_start_offset}–${p.high_watermark})`)))),
    el("label", {}, "From offset", el("input", { name: "offset", value: q.get("offset") || "", placeholder: "log start", size: "10" })),
    el("label", {}, "or from time", el("input", { name: "timestamp", value: q.get("timestamp") || "", placeholder: "2025-01-31T12:00:00Z or ms", size: "24" })),
    el("label", {}, "Limit", el("input", { name: "limit", value: q.get("limit") || "50", size: "4" })),
    el("button", { type: "submit", class: "primary" }, "Read"),
    el("label", {}, "Follow live", el("input", { type: "checkbox", name: "follow", "data-testid": "follow" })));
  const body = el("tbody", {});
  const status = el("p", { class: "muted", "data-testid": "message-status" });
  const more = el("button", { type: "button", hidden: true, "data-testid": "more" }, "More");
  main.replaceChildren(
    el("h2", {}, "Messages of ", el("a", { href: `#/topics/${enc(name)}` }, name)), form, status,
    el("table", { "data-testid": "messages" },
      el("thead", {}, el("tr", {}, ["offset", "timestamp", "key", "value", "headers"].map((h) => el("th", {}, h)))), body),
    more);
  let next = null;
  const params = () => formValues(form);
  const read = async (fromNext) => {
    const v = params();
    const parts = [`partition=${enc(v.partition)}`, `limit=${enc(v.limit)}`];
    if (fromNext) parts.push(`offset=${next}`);
    else {
      setQuery({ partition: v.partition, offset: v.offset, timestamp: v.timestamp, limit: v.limit });
      if (v.offset) parts.push(`offset=${enc(v.offset)}`);
      if (v.timestamp) parts.push(`timestamp=${enc(v.timestamp)}`);
    }
    const page = await api("GET", `/v1/topics/${enc(name)}/messages?${parts.join("&")}`);
    if (!fromNext) body.replaceChildren();
    for (const m of page.messages) body.append(messageRow(m));
    next = page.next_offset;
    status.textContent = `Partition ${page.partition}: offsets ${page.log_start_offset}–${page.high_watermark}, ` +
      `showing ${body.children.length} (read_uncommitted), next offset ${next}` +
      (page.offset_for_timestamp !== null ? `; first offset at that time: ${page.offset_for_timestamp}` : "");
    more.hidden = next >= page.high_watermark;
    return page;
  };
  const startFollow = async () => {
    follow = new AbortController();
    const signal = follow.signal;
    while (!signal.aborted) {
      const v = params();
      try {
        const page = await api("GET", `/v1/topics/${enc(name)}/messages?partition=${enc(v.partition)}&offset=${next}&limit=100&wait_ms=20000`, undefined, signal);
        for (const m of page.messages) body.append(messageRow(m));
        next = page.next_offset;
        status.textContent = `Following partition ${page.partition} live: next offset ${next}`;
      } catch (e) {
        if (e.name !== "AbortError") { showError(e.message); follow = null; return; }
      }
    }
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    guard(async () => { if ((await read(false)) && form.follow.checked && !follow) startFollow(); });
  });
  more.addEventListener("click", () => guard(() => read(true)));
  form.partition.addEventListener("change", () => {
    // Another partition: its offsets are not this one's; stop following and start over.
    if (follow) { follow.abort(); follow = null; }
    form.follow.checked = false;
    next = null;
    body.replaceChildren();
    more.hidden = true;
    status.textContent = "";
  });
  form.follow.addEventListener("change", () => {
    if (form.follow.checked) {
      guard(async () => { if (next === null) await read(false); startFollow(); });
    } else if (follow) { follow.abort(); follow = null; }
  });
  if (q.get("offset") || q.get("timestamp")) await guard(() => read(false));
}

// --- groups ----------------------------------------------------------------------------

const GROUP_PAGE = 50;

async function pageGroups(main) {
  const q = query();
  const filter = q.get("filter") || "";
  const type = q.get("type") || "";
  const offset = Number(q.get("offset") || 0);
  const data = await api("GET", `/v1/groups?filter=${enc(filter)}&type=${enc(type)}&offset=${offset}&limit=${GROUP_PAGE}`);
  const reload = (params) => { setQuery(params); route(); };
  const search = el("form", { "data-testid": "group-filter", onsubmit: (e) => { e.preventDefault(); const v = formValues(e.target); reload({ filter: v.filter, type: v.type, offset: 0 }); } },
    el("label", {}, "Filter", el("input", { name: "filter", value: filter })),
    el("label", {}, "Type", el("select", { name: "type" }, ["", "classic", "consumer"].map((t) => el("option", { value: t, selected: t === type }, t || "any")))),
    el("button", { type: "submit" }, "Filter"));
  main.replaceChildren(el("h2", {}, "Consumer groups"), search,
    table(["group", "type", "state", "protocol", "members", "epoch"],
      data.groups.map((g) => [el("a", { href: `#/groups/${enc(g.group_id)}` }, g.group_id), g.type, g.state, g.protocol || "–", num(g.members), num(g.epoch)]),
      { "data-testid": "groups" }),
    pager(data.total, offset, GROUP_PAGE, (o) => reload({ filter, type, offset: o })));
}

async function pageGroup(main, id) {
  const g = await api("GET", `/v1/groups/${enc(id)}`);
  const resetForm = el("form", { "data-testid": "reset-form" },
    el("label", {}, "Reset to", el("select", { name: "to" }, ["earliest", "latest", "offset", "timestamp", "current"].map((t) => el("option", { value: t }, t)))),
    el("label", {}, "Offset", el("input", { name: "offset", size: "10" })),
    el("label", {}, "Time", el("input", { name: "timestamp", size: "24", placeholder: "2025-01-31T12:00:00Z or ms" })),
    el("label", {}, "Topics (comma-separated; all committed if empty)", el("input", { name: "topics", size: "24" })),
    el("button", { type: "submit", "data-testid": "dry-run" }, "Dry run"),
    el("button", { type: "button", class: "danger", disabled: true, "data-testid": "execute" }, "Reset offsets"));
  const plan = el("div", { "data-testid": "plan" });
  let planned = null;
  const spec = () => {
    const v = formValues(resetForm);
    const out = { to: v.to };
    if (v.to === "offset") {
      if (!/^-?\d+$/.test(v.offset)) throw new ApiError(400, { error: `offset: expected a whole number, not ${JSON.stringify(v.offset)}` });
      out.offset = Number(v.offset);
    }
    if (v.to === "timestamp") out.timestamp = /^\d+$/.test(v.timestamp) ? Number(v.timestamp) : v.timestamp;
    if (v.topics) out.topics = v.topics.split(",").map((s) => s.trim()).filter(Boolean);
    return out;
  };
  const execute = resetForm.querySelector("[data-testid=execute]");
  resetForm.addEventListener("input", () => { planned = null; execute.disabled = true; });
  resetForm.addEventListener("submit", (e) => {
    e.preventDefault();
    guard(async () => {
      planned = null;
      execute.disabled = true;
      plan.replaceChildren();
      const s = spec();
      const answer = await api("POST", `/v1/groups/${enc(id)}/offsets/reset`, { ...s, dry_run: true });
      plan.replaceChildren(el("div", { class: "plan" }, el("b", {}, "Dry run: nothing committed yet."),
        table(["topic", "partition", "current offset", "new offset"], answer.plan.map((r) => [r.topic, num(r.partition), num(r.current_offset), num(r.new_offset)]))));
      planned = s;
      execute.disabled = false;
    });
  });
  execute.addEventListener("click", () => guard(async () => {
    if (!planned) return;
    const answer = await api("POST", `/v1/groups/${enc(id)}/offsets/reset`, { ...planned, dry_run: false });
    await route();
    showNotice(`Reset ${answer.plan.length} partition(s) of ${id} to ${answer.to}.`);
  }));
  main.replaceChildren(
    el("h2", {}, "Group ", el("span", { "data-testid": "group-id" }, g.group_id)),
    el("div", { class: "cards" },
      el("div", { class: "card" }, el("div", { class: "k" }, "state"), el("div", { class: "v", "data-testid": "group-state" }, g.state)),
      el("div", { class: "card" }, el("div", { class: "k" }, "type"), el("div", { class: "v" }, g.type)),
      el("div", { class: "card" }, el("div", { class: "k" }, "protocol"), el("div", { class: "v" }, `${g.protocol_type || "–"} / ${g.protocol || "–"}`)),
      el("div", { class: "card" }, el("div", { class: "k" }, g.type === "consumer" ? "group epoch" : "generation"), el("div", { class: "v" }, g.epoch)),
      el("div", { class: "card" }, el("div", { class: "k" }, "total lag"), el("div", { class: "v", "data-testid": "total-lag" }, g.total_lag))),
    el("div", { class: "bar" }, el("a", { href: `#/groups/${enc(id)}/timeline`, "data-testid": "timeline-link" }, "Timeline →")),
    el("h3", {}, "Members"),
    table(["member", "client id", "host", "assignment"],
      g.member_list.map((m) => [m.member_id + (m.member_id === g.leader ? " (leader)" : ""), m.client_id, m.client_host,
        Object.entries(m.assignment).map(([t, ps]) => `${t}: ${ps.join(",")}`).join("; ") || "–"]),
      { "data-testid": "members" }),
    el("h3", {}, "Offsets and lag"),
    table(["topic", "partition", "committed", "high watermark", "lag", "member"],
      g.offsets.map((r) => el("tr", { "data-partition": `${r.topic}-${r.partition}` },
        el("td", {}, r.topic), num(r.partition), num(r.committed_offset), num(r.high_watermark), el("td", { class: "num", "data-testid": "lag" }, r.lag === null ? "–" : String(r.lag)), el("td", {}, r.client_id || "–"))),
      { "data-testid": "offsets" }),
    el("h3", {}, "Reset offsets"),
    el("p", { class: "muted" }, "Only a group without members (Empty) can be reset, as with kafka-consumer-groups. A dry run shows the plan first."),
    resetForm, plan);
}

// --- timeline --------------------------------------------------------------------------

async function pageTimeline(main, id) {
  const t = await api("GET", `/v1/groups/${enc(id)}/timeline`);
  const gens = t.generations;
  main.replaceChildren(
    el("h2", {}, "Timeline of ", el("a", { href: `#/groups/${enc(id)}` }, id)),
    el("p", { class: "muted" }, `From ${t.source}${t.truncated ? " (cut: the log is larger than one scan)" : ""}; reasons from the request journal` +
      (t.journal_since_ms ? ` (it holds requests since ${when(t.journal_since_ms)})` : " (off or empty)") + ". Compaction keeps only the latest record of each key."),
    drawTimeline(t),
    el("h3", {}, "Generations"),
    table(["generation", "written", "leader", "members and assignment", "joined", "left"],
      gens.map((g) => el("tr", { "data-generation": g.generation === null ? "deleted" : g.generation },
        num(g.generation === null ? g.event : g.generation), el("td", {}, when(g.time_ms)), el("td", {}, g.leader || "–"),
        el("td", {}, g.members.map((m) => el("div", {}, `${m.member_id} (${m.client_id}) `, el("span", { class: "muted" }, Object.entries(m.assignment || {}).map(([tp, ps]) => `${tp}: ${ps.join(",")}`).join("; "))))),
        el("td", {}, g.joined.join(", ") || "–"),
        el("td", {}, g.left.map((l) => el("div", {}, `${l.member_id} (${l.client_id}): `, el("b", {}, l.how), " – ", l.why || ""))))),
      { "data-testid": "generations" }),
    el("h3", {}, `Commits (${t.commits.length} of ${t.commits_total})`),
    table(["time", "generation", "topic", "partition", "offset"],
      t.commits.slice(-200).reverse().map((c) => [when(c.time_ms), num(c.generation), c.topic, num(c.partition), num(c.deleted ? "deleted" : c.offset)]),
      { "data-testid": "commits" }));
}

// The chart: generations are evenly spaced from left to right (dashed lines), whatever the
// time between them, so that a burst of rebalances stays readable; anything else in time
// (commits) sits between the generations it came between, in proportion. A lane per member
// holds a bar from the generation it joined to the one it was gone from (a red mark: left
// or timed out, the reason in its tooltip); green dots along the bottom are commits.
function drawTimeline(t) {
  const gens = t.generations;
  const times = gens.map((g) => g.time_ms).concat(t.commits.map((c) => c.time_ms)).filter((x) => x > 0);
  if (!times.length) return el("p", { class: "muted" }, "No generation or commit in the log.");
  const members = [];
  const spans = {};
  gens.forEach((g, i) => {
    for (const m of g.members) {
      if (!spans[m.member_id]) { spans[m.member_id] = { from: i, to: null, client: m.client_id, gone: null }; members.push(m.member_id); }
    }
    for (const l of g.left) if (spans[l.member_id]) { spans[l.member_id].to = i; spans[l.member_id].gone = l; }
  });
  const left = 230, right = 30, lane = 26, top = 34;
  const width = Math.max(900, left + right + 90 * (gens.length + 1));
  const height = top + lane * (members.length + 1) + 40;
  // Anchors: each generation at its slot, and the last time seen at the right end.
  const slot = (width - left - right) / (gens.length + 1);
  const anchors = gens.map((g, i) => [g.time_ms, left + slot * (i + 0.5)]);
  const last = Math.max(...times);
  anchors.push([Math.max(last, anchors.length ? anchors[anchors.length - 1][0] : last), width - right]);
  const x = (ms) => {
    if (ms <= anchors[0][0]) return anchors[0][1];
    for (let i = 1; i < anchors.length; i++) {
      const [t0, x0] = anchors[i - 1], [t1, x1] = anchors[i];
      if (ms <= t1) return t1 === t0 ? x1 : x0 + ((ms - t0) / (t1 - t0)) * (x1 - x0);
    }
    return width - right;
  };
  const end = width - right;
  const chart = svg("svg", { class: "timeline", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "data-testid": "timeline-chart", "aria-label": `timeline of ${t.group_id}` });
  chart.append(svg("line", { class: "axis", x1: left, x2: end, y1: height - 30, y2: height - 30 }));
  chart.append(svg("text", { x: left, y: height - 12 }, when(Math.min(...times)).replace("T", " ").slice(0, 19)));
  chart.append(svg("text", { x: end, y: height - 12, "text-anchor": "end" }, when(last).replace("T", " ").slice(0, 19)));
  for (const g of gens) {
    const gx = x(g.time_ms);
    chart.append(svg("line", { class: "gen", x1: gx, x2: gx, y1: top - 12, y2: height - 30 }));
    chart.append(svg("text", { x: gx, y: top - 18, "text-anchor": "middle", "data-generation": g.generation === null ? "deleted" : g.generation },
      g.generation === null ? "deleted" : `gen ${g.generation}`, svg("title", {}, `${when(g.time_ms)}: ${g.members.length} member(s)`)));
  }
  members.forEach((id, row) => {
    const s = spans[id];
    const y = top + row * lane;
    const x1 = x(gens[s.from].time_ms);
    const x2 = s.to === null ? end : x(gens[s.to].time_ms);
    chart.append(svg("text", { x: 6, y: y + 14, "data-member": id }, `${s.client} ${id.length > 18 ? id.slice(0, 8) + "…" + id.slice(-8) : id}`));
    chart.append(svg("rect", { class: "bar", x: x1, y: y + 3, width: Math.max(2, x2 - x1), height: lane - 8 },
      svg("title", {}, `${id}: generations ${gens[s.from].generation} to ${s.to === null ? "now" : gens[s.to].generation}`)));
    if (s.gone) {
      chart.append(svg("circle", { class: "left", cx: x2, cy: y + lane / 2 - 1, r: 5 }, svg("title", {}, `${s.gone.how}: ${s.gone.why || ""}`)));
    }
  });
  const cy = top + members.length * lane + 10;
  chart.append(svg("text", { x: 6, y: cy + 4 }, `commits (${t.commits.length})`));
  for (const c of t.commits) {
    chart.append(svg("circle", { class: "commit", cx: x(c.time_ms), cy, r: 3 }, svg("title", {}, `${when(c.time_ms)} ${c.topic}-${c.partition} → ${c.offset}`)));
  }
  return chart;
}

// --- controls --------------------------------------------------------------------------

async function pageControls(main) {
  const [faults, clock, connections] = await Promise.all([
    api("GET", "/v1/faults"), api("GET", "/v1/clock"), api("GET", "/v1/connections")]);
  let journal = null;
  try {
    // The latest 50: the journal answers oldest first from `since`.
    const last = (await api("GET", "/v1/journal?limit=1")).last_seq;
    journal = await api("GET", `/v1/journal?since=${Math.max(0, last - 50)}`);
  } catch (e) { journal = { entries: [], error: e.message }; }
  const faultForm = el("form", { "data-testid": "fault-form", onsubmit: (e) => {
    e.preventDefault();
    const v = formValues(e.target);
    const spec = { api: v.api, error: v.error };
    if (v.count) {
      if (!/^-?\d+$/.test(v.count)) { showError(`count: expected a whole number, not ${JSON.stringify(v.count)}`); return; }
      spec.count = Number(v.count);
    }
    if (v.topic) spec.topic = v.topic;
    if (v.group_id) spec.group_id = v.group_id;
    guard(async () => { await api("POST", "/v1/faults", spec); await route(); showNotice("Fault added."); });
  } },
  el("label", {}, "API", el("input", { name: "api", placeholder: "Produce", required: true })),
  el("label", {}, "Error", el("input", { name: "error", placeholder: "NOT_LEADER_OR_FOLLOWER", required: true })),
  el("label", {}, "Count", el("input", { name: "count", value: "1", size: "4" })),
  el("label", {}, "Topic", el("input", { name: "topic", size: "12" })),
  el("label", {}, "Group", el("input", { name: "group_id", size: "12" })),
  el("button", { type: "submit", class: "primary" }, "Add fault"),
  el("button", { type: "button", onclick: () => guard(async () => { await api("DELETE", "/v1/faults"); await route(); }) }, "Clear faults"));
  const advance = el("form", { "data-testid": "clock-form", onsubmit: (e) => {
    e.preventDefault();
    const v = formValues(e.target);
    if (!/^-?\d+$/.test(v.ms)) { showError(`ms: expected a whole number of milliseconds, not ${JSON.stringify(v.ms)}`); return; }
    guard(async () => { await api("POST", "/v1/clock/advance", { ms: Number(v.ms) }); await route(); showNotice(`Clock advanced ${v.ms} ms.`); });
  } }, el("label", {}, "Advance by (ms)", el("input", { name: "ms", size: "8" })), el("button", { type: "submit" }, "Advance"));
  main.replaceChildren(
    el("h2", {}, "Controls"),
    el("h3", {}, "Faults"),
    table(["id", "api", "error", "count left", "fired", "filters"], faults.faults.map((f) => [f.id, f.api || f.storage, f.error || f.action || "–", num(f.count), num(f.fired),
      ["topic", "partition", "group_id", "client_id", "delay_ms"].filter((k) => f[k] !== null && f[k] !== undefined).map((k) => `${k}=${f[k]}`).join(" ")]), { "data-testid": "faults" }),
    faultForm,
    el("h3", {}, "Clock"),
    el("p", { "data-testid": "clock" }, `${clock.mode} clock, now ${when(clock.wall_ms)}` + (clock.mode === "virtual" ? `, ${clock.elapsed_ms} ms elapsed, ${clock.timers_pending} timer(s) pending` : "")),
    clock.mode === "virtual" ? advance : el("p", { class: "muted" }, "Start kmock with --clock virtual to move time by hand."),
    el("h3", {}, "Connections"),
    table(["connection", "client id", "address", "APIs"], connections.connections.map((c) => [c.connection, c.client_id, c.address, Object.keys(c.api_versions || {}).join(", ")])),
    el("h3", {}, `Request journal (latest ${Math.min(50, journal.entries.length)})`),
    journal.error ? el("p", { class: "muted" }, journal.error) :
      table(["seq", "time", "api", "client id", "outcome", "errors", "group"], journal.entries.slice(-50).reverse().map((j) => [num(j.seq), when(j.time_ms), `${j.api} v${j.version}`, j.client_id, j.outcome, j.errors.join(","), (j.request && j.request.group_id) || ""]), { "data-testid": "journal" }));
}

// --- start -----------------------------------------------------------------------------

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", async () => {
  try {
    const b = await api("GET", "/v1/brokers");
    document.getElementById("cluster").textContent = `cluster ${b.cluster_id}`;
  } catch (e) { /* shown by the page itself */ }
  route();
});
