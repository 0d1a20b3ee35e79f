// fire-exp view: renders FIRE_INDEX (data/index.js) and, when opened, one attempt's
// FIRE_ATTEMPT file. Every text from the run goes into the page as a text node
// (textContent, createTextNode); no run data is ever parsed as HTML.
"use strict";
(function () {
  const D = window.FIRE_INDEX;
  const main = document.getElementById("main");
  const C = Object.fromEntries(D.columns.map((c, i) => [c, i]));
  const PAGE = 200;
  const cache = new Map();
  const waiting = new Map();
  let token = 0; // the route being rendered; late attempt files for an older route are ignored

  // ---- DOM helpers ------------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }
  // replaceChildren would print null as "null": drop absent parts first.
  const show = (...kids) => main.replaceChildren(...kids.filter((k) => k !== null && k !== undefined));
  const fmt = (v) => (v === null || v === undefined || v === "" ? "–" : String(v));
  const yesno = (v) => (v === null || v === undefined ? "–" : v ? "yes" : "no");
  const pre = (text, cls) => el("pre", { class: cls || "" }, text === null ? "" : text);
  const folded = (summary, body, open) => el("details", { open: open || null },
    el("summary", {}, summary), body);
  function hashLink(route, params) {
    const q = new URLSearchParams(Object.entries(params || {}).filter(([, v]) => v !== "" &&
      v !== null && v !== undefined)).toString();
    return "#" + route + (q ? "?" + q : "");
  }
  function dl(pairs) {
    const d = el("dl", { class: "kv" });
    for (const [k, v] of pairs) d.append(el("dt", {}, k), el("dd", {}, v instanceof Node ? v : fmt(v)));
    return d;
  }
  function table(columns, rows, cls) {
    const head = el("tr", {}, columns.map((c) => el("th", {}, c)));
    const body = rows.map((r) => el("tr", {}, r.map((v) => el("td",
      { class: typeof v === "number" ? "num" : "" }, v instanceof Node ? v : fmt(v)))));
    return el("table", { class: cls || "data" }, el("thead", {}, head), el("tbody", {}, body));
  }

  // ---- attempts ---------------------------------------------------------------------------
  const A = D.attempts;
  const idOf = (i) => A[i][C.id] ||
    `${D.tasks[A[i][C.task]]}/${D.arms[A[i][C.arm]]}/r${A[i][C.replicate]}`;
  const byId = new Map(A.map((_, i) => [idOf(i), i]));
  window.FIRE_ATTEMPT = function (i, data) {
    cache.set(i, data);
    (waiting.get(i) || []).forEach((w) => w.resolve(data));
    waiting.delete(i);
  };
  function loadAttempt(i) {
    return new Promise((resolve, reject) => {
      if (cache.has(i)) return resolve(cache.get(i));
      if (waiting.has(i)) return waiting.get(i).push({ resolve, reject });
      waiting.set(i, [{ resolve, reject }]);
      const s = el("script", { src: `data/a/${Math.floor(i / D.shard)}/${i}.js` });
      s.onerror = () => {
        (waiting.get(i) || []).forEach((w) => w.reject(new Error("missing " + s.src)));
        waiting.delete(i);
      };
      document.head.append(s);
    });
  }
  function outcome(row) {
    const passed = row[C.passed] === 1;
    return el("span", { class: "badge " + (passed ? "pass" : "fail") }, passed ? "passed" : "failed");
  }

  // ---- overview ---------------------------------------------------------------------------
  function passRateTable() {
    const t = D.tables.find((x) => x.name === "pass_rates");
    if (!t) return null;
    const col = Object.fromEntries(t.columns.map((c, i) => [c, i]));
    const cohorts = [...new Set(t.rows.map((r) => r[col.cohort]))];
    const rows = D.arms.filter((a) => t.rows.some((r) => r[col.arm] === a)).map((arm) =>
      [arm, ...cohorts.map((c) => {
        const r = t.rows.find((x) => x[col.arm] === arm && x[col.cohort] === c);
        return r ? `${fmt(r[col.pass_rate_pct])} [${fmt(r[col.ci_low_pct])}, ${fmt(r[col.ci_high_pct])}]` : "–";
      })]);
    return el("section", {}, el("h2", {}, "Pass rate (%) per arm and cohort, 95 % CI"),
      table(["arm", ...cohorts], rows));
  }
  function renderOverview() {
    const p = D.prereg;
    const prereg = p ? el("section", {}, el("h2", {}, "Preregistration"), dl([
      ["panel", p.panel], ["prereg.json SHA-256", el("code", {}, fmt(p.sha256))],
      ["config hash", el("code", {}, fmt(p.config_hash))], ["frozen at", p.frozen_at],
      ["harness", p.harness_version], ["seed", p.seed], ["scheduled attempts", p.n_attempts]]),
      folded(`${p.items.length} hashed items`, table(["item", "SHA-256 (prefix)"], p.items)))
      : el("section", {}, el("h2", {}, "Preregistration"),
        el("p", { class: "warn" }, "No prereg.json beside the attempts file."));
    const m = D.metadata;
    const status = m.run_status || {};
    const analysis = el("section", {}, el("h2", {}, "Analysis"),
      status.partial ? el("p", { class: "warn" }, "Partial run: " + status.message) : null, dl([
      ["plan", fmt(D.plan.plan_used)],
      ["plan hash", el("code", {}, fmt(D.plan.plan_hash))], ["seed", D.plan.seed],
      ["records", m.n_records], ["scored attempts", m.n_scored], ["invalid", m.n_invalid],
      ["replaced", m.n_superseded], ["infrastructure failures", m.n_infrastructure_failures]]),
      D.notes.length ? el("ul", { class: "notes" }, D.notes.map((n) => el("li", {}, n))) : null);
    const figures = el("section", { class: "figures" }, el("h2", {}, "Figures"),
      D.figures.map((f) => el("figure", {}, el("img", { src: f.src, alt: f.name }),
        el("figcaption", {}, f.name))));
    const open = new Set(["contrasts", "funnel", "near_miss"]);
    const tables = el("section", {}, el("h2", {}, "Tables of the analysis"),
      D.tables.map((t) => el("details", { class: "table", open: open.has(t.name) || null,
        id: "table-" + t.name }, el("summary", {}, `${t.name} (${t.rows.length} rows)`),
        el("div", { class: "scroll" }, table(t.columns, t.rows)))));
    show(el("h1", {}, D.title), el("p", { class: "muted" }, D.source),
      el("div", { class: "cols" }, prereg, analysis), passRateTable(), figures, tables);
  }

  // ---- task x arm grid ----------------------------------------------------------------------
  const CIVIDIS = [[0, 34, 78], [124, 123, 120], [254, 232, 56]];
  function shade(rate) {
    const [a, b, t] = rate < 0.5 ? [CIVIDIS[0], CIVIDIS[1], rate * 2] : [CIVIDIS[1], CIVIDIS[2], rate * 2 - 1];
    return `rgb(${a.map((x, k) => Math.round(x + (b[k] - x) * t)).join(",")})`;
  }
  function gridRow(t, cells) {
    const task = D.tasks[t];
    return el("tr", {}, el("th", { class: "task", title: task }, el("a", { href: hashLink("compare", { task }) }, task)),
      D.arms.map((arm, a) => {
        const c = cells.get(t * D.arms.length + a);
        if (!c) return el("td", { class: "cell empty" }, "–");
        const link = el("a", { class: "cell", href: hashLink("attempts", { task, arm }),
          title: `${task} · ${arm}: ${c[0]} of ${c[1]} scored attempts passed` }, `${c[0]}/${c[1]}`);
        link.style.background = shade(c[0] / c[1]);
        link.style.color = c[0] / c[1] > 0.6 ? "#000" : "#fff";
        return el("td", { "data-task": task, "data-arm": arm }, link);
      }));
  }
  function renderGrid() {
    const cells = new Map(D.grid.map(([t, a, s, n]) => [t * D.arms.length + a, [s, n]]));
    const order = []; // cohort header rows (as strings) and task indices, in display order
    D.cohorts.forEach((cohort, ci) => {
      const tasks = D.tasks.map((_, t) => t).filter((t) => D.taskCohort[t] === ci);
      if (tasks.length) order.push(`${cohort} (${tasks.length} tasks)`, ...tasks);
    });
    const body = el("tbody", {}, order.map((x) => typeof x === "string"
      ? el("tr", { class: "cohort" }, el("th", { colspan: D.arms.length + 1 }, x)) : gridRow(x, cells)));
    show(el("h1", {}, "Tasks × arms"),
      el("p", { class: "muted" }, "Passed / scored attempts of each task under each arm " +
        "(the report's heatmap). A cell lists its attempts; a task name opens the side-by-side view."),
      el("table", { class: "grid", id: "grid" }, el("thead", {}, el("tr", {}, el("th", {}, "task"),
        D.arms.map((a) => el("th", {}, a)))), body));
  }

  // ---- attempt list with filters ---------------------------------------------------------
  const FILTERS = [
    ["arm", D.arms, (r, v) => D.arms[r[C.arm]] === v],
    ["cohort", D.cohorts, (r, v) => D.cohorts[r[C.cohort]] === v],
    ["family", D.families, (r, v) => r[C.families].some((f) => D.families[f] === v)],
    ["outcome", ["passed", "failed"], (r, v) => (r[C.passed] === 1) === (v === "passed")],
    ["cause", ["none", ...D.causes], (r, v) => (v === "none" ? r[C.cause] === null : D.causes[r[C.cause]] === v)],
    ["fired", ["yes", "no"], (r, v) => r[C.fired] !== null && (r[C.fired] === 1) === (v === "yes")],
    ["near_miss", ["yes", "no"], (r, v) => r[C.near_miss] !== null && (r[C.near_miss] === 1) === (v === "yes")],
  ];
  function renderAttempts(params) {
    const task = params.get("task") || "";
    const shown = Number(params.get("show") || PAGE);
    const active = FILTERS.filter(([name]) => params.get(name));
    const match = A.map((r, i) => i).filter((i) => (!task || D.tasks[A[i][C.task]] === task) &&
      active.every(([name, , test]) => test(A[i], params.get(name))));
    const change = (name, value) => {
      const next = new URLSearchParams(params);
      if (value) next.set(name, value); else next.delete(name);
      next.delete("show");
      location.hash = "attempts" + (next.toString() ? "?" + next : "");
    };
    const controls = el("form", { class: "filters", id: "filters", onsubmit: (e) => e.preventDefault() },
      FILTERS.filter(([, values]) => values.length).map(([name, values]) => el("label", {}, name.replace("_", "-") + " ",
        el("select", { name, onchange: (e) => change(name, e.target.value) },
          el("option", { value: "" }, "any"),
          values.map((v) => el("option", { value: v, selected: params.get(name) === v || null }, v))))),
      task ? el("span", { class: "chip" }, "task " + task + " ",
        el("button", { type: "button", onclick: () => change("task", "") }, "×")) : null);
    const rows = match.slice(0, shown).map((i) => {
      const r = A[i];
      const flags = [r[C.valid] ? null : "invalid", r[C.replaced] ? "replaced" : null].filter(Boolean);
      return el("tr", { "data-index": i }, el("td", {}, el("a", { href: "#attempt/" + i }, idOf(i))),
        el("td", {}, D.tasks[r[C.task]]), el("td", {}, D.arms[r[C.arm]]), el("td", {}, D.cohorts[r[C.cohort]]),
        el("td", {}, outcome(r)), el("td", { class: "num" }, fmt(r[C.reward])),
        el("td", {}, r[C.cause] === null ? "–" : D.causes[r[C.cause]]), el("td", {}, yesno(r[C.fired])),
        el("td", {}, yesno(r[C.state])), el("td", {}, yesno(r[C.behavior])), el("td", {}, yesno(r[C.near_miss])),
        el("td", {}, r[C.families].map((f) => D.families[f]).join(", ") || "–"), el("td", {}, flags.join(", ") || "–"));
    });
    const more = match.length > shown ? el("button", { type: "button", id: "more",
      onclick: () => { const n = new URLSearchParams(params); n.set("show", shown + PAGE); location.hash = "attempts?" + n; } },
    `show ${Math.min(PAGE, match.length - shown)} more`) : null;
    show(el("h1", {}, "Attempts"), controls,
      el("p", { id: "count" }, `${match.length} of ${A.length} attempts`),
      el("table", { class: "data", id: "attempt-list" }, el("thead", {}, el("tr", {},
        ["attempt", "task", "arm", "cohort", "outcome", "reward", "cause", "fired", "risky state",
          "behavior", "near-miss", "families", "flags"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)), more);
  }

  // ---- one attempt ----------------------------------------------------------------------------
  function eventBox(ev) {
    const what = ev.decision === "deny" ? "denied the command" : ev.decision === "instruct" ? "instruction" : ev.decision;
    return el("div", { class: "event " + (ev.decision || ""), "data-event": ev.event },
      el("div", { class: "event-head" }, el("b", {}, `${fmt(ev.event)} · ${fmt(ev.family)} / ${fmt(ev.rule)}`),
        ` — ${fmt(what)}`), pre(ev.text, "event-text"));
  }
  function stepItem(s) {
    const events = s.events.map(eventBox);
    if (s.kind === "start") return el("li", { class: "step start", "data-step": 0 }, el("div", { class: "step-head" }, "session start"), events);
    if (s.kind !== "command") {
      return el("li", { class: "step stop", "data-step": s.step }, el("div", { class: "step-head" },
        `${s.kind === "stop" ? "agent stops" : s.kind} (after command ${s.step})`), events);
    }
    const status = s.denied ? el("span", { class: "badge fail" }, "denied") :
      el("span", { class: "badge " + (s.exit_code === 0 ? "ok" : "warnb") }, `exit ${fmt(s.exit_code)}`);
    return el("li", { class: "step command", "data-step": s.step },
      el("div", { class: "step-head" }, `step ${s.step} `, status), pre(s.command, "cmd"),
      events, folded(`output (${s.output.length} characters)`, pre(s.output, "output")));
  }
  function familyTable(d) {
    const extra = [...new Set(d.family_funnel.flatMap((f) => Object.keys(f)))].filter((k) =>
      !["family", "state", "fired", "behavior", "passed"].includes(k));
    const errors = d.coding_errors || {};
    const note = Object.keys(errors).length ? ["extractor error"] : [];
    const rows = d.family_funnel.map((f) => [f.family, yesno(f.state), yesno(f.fired), yesno(f.behavior), yesno(f.passed),
      ...extra.map((k) => fmt(typeof f[k] === "object" && f[k] !== null ? JSON.stringify(f[k]) : f[k])),
      ...note.map(() => fmt(errors[f.family]))]);
    rows.push(["whole attempt", yesno(d.funnel.state), yesno(d.funnel.fired), yesno(d.funnel.behavior), yesno(d.funnel.passed),
      ...extra.map(() => ""), ...note.map(() => "")]);
    return table(["family", "risky state", "fired", "behavior", "passed", ...extra, ...note], rows);
  }
  function lineageLink(id) {
    if (!id) return "–";
    return byId.has(id) ? el("a", { href: "#attempt/" + byId.get(id) }, id) : id;
  }
  function attemptView(i, d, compact) {
    const row = A[i];
    const head = el("div", { class: "attempt-head" }, outcome(row), ` reward ${fmt(d.reward)}`,
      d.cause ? el("span", { class: "badge warnb" }, d.cause) : null,
      d.valid === false ? el("span", { class: "badge fail" }, "invalid") : null,
      d.near_miss ? el("span", { class: "badge warnb" }, "near-miss") : null);
    if (!D.hasLogs) return el("div", { class: "attempt" }, head, dl(Object.entries(d)));
    const parts = [head];
    if (!compact) parts.push(el("section", {}, el("h2", {}, "Instruction"),
      d.instruction === null ? el("p", { class: "muted" }, "task folder not found; instruction not shown") : folded("instruction.md", pre(d.instruction, "instruction"), true)));
    parts.push(el("section", {}, el("h2", {}, "Funnel coding per family"), familyTable(d)));
    parts.push(el("section", {}, el("h2", {}, `Timeline (${d.steps.length ? d.steps.length - 1 : 0} steps)`),
      d.log_problems.length ? el("ul", { class: "warn" }, d.log_problems.map((p) => el("li", {}, p))) : null,
      el("ol", { class: "timeline" }, d.steps.map(stepItem)),
      d.unplaced.length ? el("div", {}, el("h3", {}, "Events not placed on a step"), d.unplaced.map(eventBox)) : null));
    const v = d.verifier || {};
    parts.push(el("section", {}, el("h2", {}, "Verifier"), dl([["reward", d.reward], ["reward.txt", v["reward.txt"]]]),
      folded("test output", pre(v["test-stdout.txt"], "output"), !compact), folded("result.json", pre(v["result.json"], "output"))));
    if (!compact) {
      const t = d.timings, u = d.usage, l = d.lineage;
      parts.push(el("div", { class: "cols" },
        el("section", {}, el("h2", {}, "Timings, tokens, cost"), dl([["environment s", t.environment_s], ["agent s", t.agent_s],
          ["verifier s", t.verifier_s], ["total s", t.total_s], ["input tokens", u.input_tokens], ["output tokens", u.output_tokens],
          ["cost USD", u.cost_usd], ["model", u.model], ["route", u.route]])),
        el("section", {}, el("h2", {}, "Lineage and validity"), dl([["replaces", lineageLink(l.replaces)],
          ["replaced by", lineageLink(l.replaced_by)], ["lineage cause", l.cause], ["valid", yesno(d.valid)],
          ["invalid reason", d.invalid_reason], ["cause", d.cause], ["error", d.error], ["gave up", yesno(d.gave_up)]])),
        el("section", {}, el("h2", {}, "Attempt"), dl([["agent", d.agent], ["tier", d.tier], ["environment", d.environment],
          ["seed", d.seed], ["arm order", d.order], ["policy events", d.events], ["decisions", d.decisions],
          ["started", d.started_at], ["finished", d.finished_at], ["config hash", d.config_hash], ["log folder", d.log_dir]]))));
      parts.push(folded("setup.log", pre(d.setup_log, "output")), folded(`log files (${(d.log_files || []).length})`,
        el("ul", {}, (d.log_files || []).map((f) => el("li", {}, f)))));
    }
    return el("div", { class: "attempt" + (compact ? " compact" : "") }, parts);
  }
  function siblings(i) {
    const t = A[i][C.task];
    return el("p", { class: "siblings" }, "Same task: ", A.map((r, j) => j).filter((j) => A[j][C.task] === t)
      .sort((x, y) => A[x][C.arm] - A[y][C.arm] || A[x][C.replicate] - A[y][C.replicate] || x - y).map((j) => el("a", { href: "#attempt/" + j, class: j === i ? "current" : "" }, `${D.arms[A[j][C.arm]]} r${A[j][C.replicate]}`)));
  }
  function renderAttempt(i) {
    if (!(i >= 0 && i < A.length)) { show(el("p", { class: "warn" }, "No such attempt.")); return; }
    const mine = token, row = A[i], task = D.tasks[row[C.task]], arm = D.arms[row[C.arm]];
    const title = el("h1", {}, idOf(i));
    const sub = el("p", { class: "muted" }, `${task} · ${arm} · ${D.cohorts[row[C.cohort]]} · replicate ${row[C.replicate]} · `,
      el("a", { href: hashLink("compare", { task, a: arm }) }, "side by side"));
    show(title, sub, siblings(i), el("p", {}, "Loading attempt…"));
    return loadAttempt(i).then((d) => { if (mine === token) show(title, sub, siblings(i), attemptView(i, d, false)); },
      (e) => { if (mine === token) show(title, el("p", { class: "warn" }, String(e.message))); });
  }

  // ---- side by side ---------------------------------------------------------------------------
  function renderCompare(params) {
    const task = params.get("task") || D.tasks[0];
    const a = params.get("a") || D.arms[0];
    const b = params.get("b") || D.arms.find((x) => x !== a && x === "sham") || D.arms.find((x) => x !== a) || a;
    const set = (k, v) => { const n = new URLSearchParams(params); n.set("task", task); n.set("a", a); n.set("b", b);
      if (k !== "ia" && k !== "ib") { n.delete("ia"); n.delete("ib"); }
      n.set(k, v); location.hash = "compare?" + n; };
    const pick = (k, values, current) => el("label", {}, k + " ", el("select", { name: k, onchange: (e) => set(k, e.target.value) },
      values.map((v) => el("option", { value: v, selected: v === current || null }, v))));
    const mine = token;
    const loads = [];
    const column = (arm, key) => {
      const idx = A.map((r, j) => j).filter((j) => D.tasks[A[j][C.task]] === task && D.arms[A[j][C.arm]] === arm);
      const wanted = Number(params.get(key));
      const chosen = idx.includes(wanted) ? wanted : (idx.length ? idx[0] : -1);
      const box = el("div", { class: "side" }, el("h2", {}, arm), el("p", {}, idx.map((j) =>
        el("a", { href: "#", class: j === chosen ? "current" : "", onclick: (e) => { e.preventDefault(); set(key, j); } },
          `r${A[j][C.replicate]}${A[j][C.passed] ? " ✓" : " ✗"} `)), " · ", el("a", { href: "#attempt/" + chosen }, "open this attempt")));
      if (chosen < 0) { box.append(el("p", { class: "muted" }, "no attempt of this arm on this task")); return box; }
      const slot = el("div", {}, "Loading…");
      box.append(slot);
      loads.push(loadAttempt(chosen).then((d) => { if (mine === token) slot.replaceChildren(attemptView(chosen, d, true)); },
        (e) => { if (mine === token) slot.replaceChildren(el("p", { class: "warn" }, String(e.message))); }));
      return box;
    };
    show(el("h1", {}, "Side by side"),
      el("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, pick("task", D.tasks, task), pick("a", D.arms, a), pick("b", D.arms, b)),
      el("div", { class: "compare" }, column(a, "ia"), column(b, "ib")));
    return Promise.all(loads);
  }

  // ---- routing ------------------------------------------------------------------------------------
  function render() {
    const mine = ++token;
    window.FIRE_DRAWN = undefined;
    const raw = location.hash.slice(1) || "overview";
    const q = raw.indexOf("?");
    const path = q < 0 ? raw : raw.slice(0, q);
    const params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
    const [route, arg] = path.split("/");
    document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.route === route));
    const pages = { grid: renderGrid, attempts: () => renderAttempts(params),
      attempt: () => renderAttempt(Number(arg)), compare: () => renderCompare(params) };
    const done = (pages[route] || renderOverview)();
    window.scrollTo(0, 0);
    // FIRE_DRAWN: when this route's page was last painted (ms from navigation; the benchmark).
    Promise.resolve(done).then(() => requestAnimationFrame(() => setTimeout(() => {
      if (mine === token) window.FIRE_DRAWN = performance.now();
    }, 0)));
  }
  document.getElementById("title").textContent = "fire-exp view · " + D.title;
  document.title = "fire-exp view · " + D.title;
  window.addEventListener("hashchange", render);
  render();
}());
