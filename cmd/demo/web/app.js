// The coordelect demo page: it renders the cluster's state from the
// server-sent events of /api/events and drives the cluster through
// /api/... POSTs. No framework, no external resources.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const $ = (sel) => document.querySelector(sel);

const ring = { cx: 230, cy: 215, r: 140, node: 27 };
const rows = new Map();   // node name -> table row parts
const shapes = new Map(); // node name -> svg parts
const msgRows = new Map(); // message type -> row parts
const jobTiles = new Map(); // job name -> tile parts
let layers = null;        // svg layers, created once
let last = null;          // the last state
let prev = null;          // message totals at the previous rate sample

// The legend's words for the elector's states (core.State's names).
const STATE_LABEL = { lost: "follower", cand: "candidate", sleep: "starting" };
const stateLabel = (state) => STATE_LABEL[state] || state;

// andList joins names as "3", "3 and 4", "3, 4 and 5".
function andList(names) {
  if (names.length < 2) return names.join("");
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

// leadText: "3 and 4 both lead", "3, 4 and 5 all lead".
const leadText = (names) => `${andList(names)} ${names.length === 2 ? "both" : "all"} lead`;

// ---------- actions ----------

async function post(path, body) {
  const err = $("#error");
  try {
    const res = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: body === undefined ? "" : JSON.stringify(body),
    });
    const out = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(out.error || res.statusText);
    err.hidden = true;
  } catch (e) {
    err.textContent = e.message;
    err.hidden = false;
  }
}

const nodeAction = (name, what, body) => post(`api/nodes/${encodeURIComponent(name)}/${what}`, body);

// ---------- the ring ----------

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function position(i, n) {
  const a = -Math.PI / 2 + (2 * Math.PI * i) / n;
  return { x: ring.cx + ring.r * Math.cos(a), y: ring.cy + ring.r * Math.sin(a), a };
}

function ensureLayers() {
  if (layers) return layers;
  const svg = $("#ring");
  const defs = el("defs", {}, svg);
  for (const [id, color] of [["arrow", "#9fb4e8"], ["arrow-split", "#d64545"]]) {
    const m = el("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", fill: color }, m);
  }
  el("circle", { class: "ring-track", cx: ring.cx, cy: ring.cy, r: ring.r }, svg);
  layers = { cut: el("g", {}, svg), follow: el("g", {}, svg), nodes: el("g", {}, svg) };
  return layers;
}

function nodeShape(name) {
  let s = shapes.get(name);
  if (s) return s;
  const g = el("g", { class: "node", "data-node": name }, ensureLayers().nodes);
  s = {
    g,
    halo: el("circle", { class: "halo", r: ring.node + 6 }, g),
    body: el("circle", { class: "body", r: ring.node }, g),
    name: el("text", { class: "name" }, g),
    crown: el("text", { class: "crown", y: -ring.node - 8 }, g),
    label: el("text", { class: "label" }, g),
  };
  s.lines = [el("tspan", {}, s.label), el("tspan", {}, s.label)];
  s.name.textContent = name;
  const title = el("title", {}, g);
  s.title = title;
  shapes.set(name, s);
  return s;
}

function renderRing(v) {
  const L = ensureLayers();
  const n = v.nodes.length;
  const pos = new Map();
  v.nodes.forEach((node, i) => {
    const p = position(i, n);
    pos.set(node.name, p);
    const s = nodeShape(node.name);
    s.g.setAttribute("transform", `translate(${p.x.toFixed(1)},${p.y.toFixed(1)})`);
    s.g.setAttribute("class", `node ${node.state}${node.electing ? " electing" : ""}${node.group ? " group" + node.group : ""}`);
    s.crown.textContent = node.state === "coordinator" ? "♛" : "";
    placeLabel(s, p, !node.up ? ["down"] : node.no_quorum ? ["no quorum", `rating ${node.rating}`] : [`rating ${node.rating}`, `term ${node.term_text}`]);
    s.title.textContent = `node ${node.name} (${node.addr}): ${node.no_quorum ? "no quorum" : stateLabel(node.state)}`;
  });
  renderFollows(L.follow, v, pos);
  renderCut(L.cut, v, pos);
}

// placeLabel writes a node's label outside the ring, away from the centre,
// one line per entry of lines (at most two).
function placeLabel(s, p, lines) {
  const out = ring.node + 12;
  const cos = Math.cos(p.a), sin = Math.sin(p.a);
  const x = cos * out;
  const lineHeight = 13;
  // Above the node the lines grow upwards, below it downwards.
  let y = sin * out + (sin > 0.3 ? 10 : sin < -0.3 ? -lineHeight * (lines.length - 1) : 4 - (lineHeight * (lines.length - 1)) / 2);
  s.label.style.textAnchor = cos > 0.3 ? "start" : cos < -0.3 ? "end" : "middle";
  s.lines.forEach((t, i) => {
    t.textContent = lines[i] || "";
    t.setAttribute("x", x.toFixed(1));
    t.setAttribute("y", (y + i * lineHeight).toFixed(1));
  });
}

// renderFollows draws an arrow from every running node to the coordinator
// it reports.
function renderFollows(layer, v, pos) {
  layer.replaceChildren();
  const split = v.leaders.length > 1;
  for (const node of v.nodes) {
    if (!node.up || !node.coordinator || node.coordinator === node.name) continue;
    const a = pos.get(node.name), b = pos.get(node.coordinator);
    if (!a || !b) continue;
    const dx = b.x - a.x, dy = b.y - a.y, d = Math.hypot(dx, dy);
    const k1 = (ring.node + 3) / d, k2 = (ring.node + 6) / d;
    el("line", {
      class: split ? "follow split" : "follow",
      x1: a.x + dx * k1, y1: a.y + dy * k1, x2: b.x - dx * k2, y2: b.y - dy * k2,
      "marker-end": split ? "url(#arrow-split)" : "url(#arrow)",
    }, layer);
  }
}

// renderCut draws the partition as a dashed line between the two sides
// when each side is one arc of the ring.
function renderCut(layer, v, pos) {
  layer.replaceChildren();
  if (!v.partition) return;
  const n = v.nodes.length;
  const gaps = [];
  v.nodes.forEach((node, i) => {
    const next = v.nodes[(i + 1) % n];
    if (node.group !== next.group) {
      gaps.push((position(i, n).a + position(i + 1, n).a) / 2);
    }
  });
  if (gaps.length !== 2) return;
  const R = ring.r + 45;
  const [p, q] = gaps.map((a) => ({ x: ring.cx + R * Math.cos(a), y: ring.cy + R * Math.sin(a) }));
  el("line", { class: "cut", x1: p.x, y1: p.y, x2: q.x, y2: q.y }, layer);
  const t = el("text", { class: "cut-label", x: ring.cx, y: ring.cy + 4 }, layer);
  t.textContent = "partitioned";
}

// ---------- the node table ----------

function cell(tr, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function button(text, cls, onclick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.className = cls;
  b.addEventListener("click", onclick);
  return b;
}

function nodeRow(name) {
  let r = rows.get(name);
  if (r) return r;
  const tr = document.createElement("tr");
  tr.dataset.node = name;
  r = { tr };
  r.name = cell(tr, "mono");
  r.name.textContent = name;
  r.state = document.createElement("span");
  cell(tr).appendChild(r.state);
  const rating = cell(tr, "num rating");
  r.rating = document.createElement("span");
  r.minus = button("−", "step", () => nodeAction(name, "rating", { delta: -1 }));
  r.plus = button("+", "step", () => nodeAction(name, "rating", { delta: 1 }));
  r.minus.title = "lower the rating";
  r.plus.title = "raise the rating";
  rating.append(r.minus, r.rating, r.plus);
  r.term = cell(tr, "mono");
  r.follows = cell(tr, "mono");
  r.members = cell(tr, "num");
  r.leads = cell(tr, "leads");
  const actions = cell(tr, "actions");
  r.crash = button("Crash", "small danger", () => nodeAction(name, r.up ? "crash" : "restart"));
  r.resign = button("Resign", "small", () => nodeAction(name, "resign"));
  r.resign.dataset.action = "resign";
  r.resign.dataset.node = name;
  r.crash.dataset.node = name;
  actions.append(r.resign, r.crash);
  $("#nodes tbody").appendChild(tr);
  rows.set(name, r);
  return r;
}

function renderNodes(v) {
  for (const node of v.nodes) {
    const r = nodeRow(node.name);
    r.up = node.up;
    Object.assign(r.tr.dataset, { state: node.state, coordinator: node.coordinator, up: node.up, term: node.term_text });
    r.tr.className = node.up ? "" : "down";
    r.state.className = `badge ${node.no_quorum ? "noquorum" : node.state}`;
    r.state.textContent = node.no_quorum ? "no quorum"
      : node.electing && node.state !== "coordinator" ? `${stateLabel(node.state)} · electing` : stateLabel(node.state);
    r.state.title = node.no_quorum
      ? `fewer than ${last.majority} of the quorum size ${last.quorum} run on its side: it cannot elect a coordinator (the quorum guard)`
      : "";
    r.rating.textContent = node.rating;
    r.minus.disabled = r.plus.disabled = !node.up;
    r.crash.disabled = false;
    r.term.textContent = node.up ? node.term_text : "–";
    r.follows.textContent = node.up ? (node.coordinator === node.name ? "itself" : node.coordinator || "none") : "–";
    r.members.textContent = node.up ? `${node.alive}/${node.known}` : "–";
    renderLeads(r, node);
    r.crash.textContent = node.up ? "Crash" : "Restart";
    r.crash.className = node.up ? "small danger" : "small";
    r.crash.dataset.action = node.up ? "crash" : "restart";
    r.resign.disabled = !node.leading;
  }
}

// renderLeads shows the jobs a node leads as chips in its row.
function renderLeads(r, node) {
  const leads = node.leads || [];
  r.tr.dataset.leads = leads.join(",");
  if (r.leadsKey === r.tr.dataset.leads) return;
  r.leadsKey = r.tr.dataset.leads;
  r.leads.replaceChildren(...leads.map((job) => {
    const c = document.createElement("span");
    c.className = "chip";
    c.textContent = job;
    return c;
  }));
}

// ---------- the jobs ----------

function jobTile(name) {
  let t = jobTiles.get(name);
  if (t) return t;
  const div = document.createElement("div");
  div.className = "job";
  div.dataset.job = name;
  t = { div, name: document.createElement("div"), leader: document.createElement("div"), term: document.createElement("div"), last: "" };
  t.name.className = "job-name";
  t.name.textContent = name;
  t.leader.className = "job-leader";
  t.term.className = "job-term";
  div.append(t.name, t.leader, t.term);
  $("#jobs").appendChild(div);
  jobTiles.set(name, t);
  return t;
}

// renderJobs shows each job's leader and term; a job whose agreed leader
// changed is highlighted for a moment.
function renderJobs(v) {
  const jobs = v.jobs || [];
  $("#jobs-card").hidden = jobs.length === 0;
  document.body.classList.toggle("nojobs", jobs.length === 0);
  const led = jobs.filter((j) => j.agreed).length;
  $("#jobs-hint").textContent = `${jobs.length} named elections, leaders spread by rating · ${led} of ${jobs.length} led`;
  for (const j of jobs) {
    const t = jobTile(j.name);
    Object.assign(t.div.dataset, { leader: j.leader, term: j.term_text, agreed: j.agreed });
    let cls = "job";
    if (j.agreed) {
      if (t.last && t.last !== j.leader) Object.assign(t, { from: t.last, movedUntil: v.now + 3000 });
      t.last = j.leader;
      const moved = v.now < (t.movedUntil || 0);
      t.leader.textContent = `node ${j.leader}`;
      t.term.textContent = `term ${j.term_text}` + (moved ? ` · from ${t.from}` : "");
      t.div.title = `${j.name}: led by ${j.leader} in term ${j.term_text}, agreed by every running node`;
      if (moved) cls += " moved";
    } else if (j.leaders.length > 1) {
      cls += " split";
      t.leader.textContent = leadText(j.leaders);
      t.term.textContent = "split brain";
      t.div.title = `${j.name}: ${leadText(j.leaders)}; the higher term wins when they meet`;
    } else {
      cls += " wait";
      t.leader.textContent = j.leaders.length === 1 ? `node ${j.leaders[0]}?` : "electing…";
      t.term.textContent = j.leaders.length === 1 ? "not followed by all yet" : "no leader agreed";
      t.div.title = `${j.name}: no leader agreed by every running node yet`;
    }
    t.div.className = cls;
  }
}

// ---------- banner, messages ----------

function renderBanner(v) {
  const b = $("#banner");
  const running = v.nodes.filter((n) => n.up);
  const up = running.length;
  const noQuorum = running.filter((n) => n.no_quorum).map((n) => n.name);
  document.body.dataset.agreed = v.agreed ? v.coordinator : "";
  if (v.agreed) {
    b.className = "banner ok";
    b.textContent = `Coordinator ${v.coordinator} · term ${v.term_text} · agreed by all ${up} running nodes`;
  } else if (v.leaders.length > 1) {
    b.className = "banner bad";
    const guard = v.quorum ? `quorum guard ${v.quorum}` : "quorum guard off";
    b.textContent = `Split brain: ${leadText(v.leaders)} (${guard}); the higher term wins when the sides meet`;
  } else if (up === 0) {
    b.className = "banner bad";
    b.textContent = "Every node is down";
  } else if (noQuorum.length > 0) {
    renderNoQuorum(b, v, running, noQuorum);
  } else {
    b.className = "banner wait";
    b.textContent = "Electing: no coordinator agreed by every running node yet";
  }
  $("#algorithm").textContent = v.algorithm;
  $("#quorum").textContent = v.quorum ? `quorum ${v.quorum}` : "no quorum guard";
  document.body.classList.toggle("partitioned", Boolean(v.partition));
  $("#partition").disabled = up < 2;
  $("#heal").disabled = !v.partition;
  $("#resign").disabled = !v.agreed;
}

// renderNoQuorum: with the quorum guard, nodes on a side with fewer than a
// majority of the quorum size report no coordinator, by design.
function renderNoQuorum(b, v, running, noQuorum) {
  const why = `fewer than ${v.majority} of ${v.quorum} nodes on their side`;
  const who = noQuorum.length === 1 ? `${noQuorum[0]} has` : `${andList(noQuorum)} have`;
  const rest = running.filter((n) => !n.no_quorum);
  const leader = v.leaders.length === 1 ? running.find((n) => n.name === v.leaders[0]) : null;
  if (rest.length === 0) {
    b.className = "banner bad";
    b.textContent = `No quorum: no coordinator anywhere, every running node has ${why} (quorum guard)`;
  } else if (leader && rest.every((n) => n.coordinator === leader.name)) {
    b.className = "banner ok";
    b.textContent = `Coordinator ${leader.name} · term ${leader.term_text} · agreed by ${andList(rest.map((n) => n.name))}; ` +
      `${who} no quorum (${why}): no coordinator, as the quorum guard intends`;
  } else {
    b.className = "banner wait";
    b.textContent = `Electing on the majority side; ${who} no quorum (${why})`;
  }
}

function renderMessages(v) {
  const rates = new Map();
  if (prev && v.now > prev.now) {
    const dt = (v.now - prev.now) / 1000;
    for (const m of v.messages) rates.set(m.type, Math.max(0, (m.sent - (prev.sent.get(m.type) || 0)) / dt));
  }
  if (!prev || v.now - prev.now >= 900) {
    prev = { now: v.now, sent: new Map(v.messages.map((m) => [m.type, m.sent])) };
  }
  const top = Math.max(1, ...rates.values());
  const body = $("#messages tbody");
  for (const m of v.messages) {
    let r = msgRows.get(m.type);
    if (!r) {
      const tr = document.createElement("tr");
      tr.dataset.type = m.type;
      r = { name: cell(tr, "mono"), total: cell(tr, "num"), rate: cell(tr, "num"), bar: document.createElement("i") };
      const bar = document.createElement("div");
      bar.className = "bar";
      bar.appendChild(r.bar);
      cell(tr).appendChild(bar);
      r.name.textContent = m.type.toUpperCase();
      body.appendChild(tr);
      msgRows.set(m.type, r);
    }
    r.total.textContent = m.sent.toLocaleString();
    if (rates.has(m.type)) {
      const rate = rates.get(m.type);
      r.rate.textContent = rate < 10 ? rate.toFixed(1) : Math.round(rate).toLocaleString();
      r.bar.style.width = `${(100 * rate) / top}%`;
    }
  }
  $("#dropped").textContent = `Dropped or lost: ${v.dropped.toLocaleString()} (stale terms, refused sends to unreachable nodes, ...)`;
}

// ---------- the event log ----------

const MAX_LOG = 300;

function addLog(e) {
  const li = document.createElement("li");
  li.className = e.kind;
  const t = document.createElement("time");
  const d = new Date(e.t);
  t.textContent = d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
  const span = document.createElement("span");
  span.textContent = e.text;
  li.append(t, span);
  const log = $("#log");
  log.prepend(li);
  while (log.children.length > MAX_LOG) log.lastChild.remove();
}

// ---------- the event stream ----------

// setActions enables the page's buttons (on) or disables all of them
// (off: no state from the server yet, or the stream broke).
function setActions(on) {
  document.body.dataset.live = on ? "true" : "";
  for (const b of document.querySelectorAll("button")) if (!on) b.disabled = true;
}

function render(v) {
  last = v;
  document.body.dataset.live = "true";
  renderBanner(v);
  renderRing(v);
  renderNodes(v);
  renderJobs(v);
  renderMessages(v);
}

function connect() {
  const conn = $("#conn");
  const es = new EventSource("api/events");
  es.addEventListener("open", () => { conn.className = "conn on"; conn.textContent = "live"; });
  es.addEventListener("error", () => {
    conn.className = "conn off";
    conn.textContent = "reconnecting";
    setActions(false); // the buttons come back with the next state
  });
  es.addEventListener("state", (ev) => render(JSON.parse(ev.data)));
  es.addEventListener("log", (ev) => addLog(JSON.parse(ev.data)));
  es.addEventListener("backlog", (ev) => {
    $("#log").replaceChildren();
    for (const e of JSON.parse(ev.data)) addLog(e);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("#resign").addEventListener("click", () => last && last.agreed && nodeAction(last.coordinator, "resign"));
  $("#partition").addEventListener("click", () => post("api/partition"));
  $("#heal").addEventListener("click", () => post("api/heal"));
  $("#verbose").addEventListener("change", (e) => $("#log").classList.toggle("quiet", !e.target.checked));
  connect();
});
