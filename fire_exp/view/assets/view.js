// fire-exp view: renders FIRE_INDEX (data/index.js) and, when opened, one attempt's
// FIRE_ATTEMPT file; a text search loads the FIRE_SEARCH shards once. Every text from the
// run goes into the page as a text node (textContent, createTextNode); no run data is ever
// parsed as HTML. Seeds and ids arrive as strings, so no digit is lost.
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
  const unknown = (v) => (v === null || v === undefined ? "unknown" : String(v));
  const yesno = (v) => (v === null || v === undefined ? "unknown" : v ? "yes" : "no");
  // The one rounding rule (fire_exp/report/rounding.py): half away from zero on the
  // number's shortest spelling, which JavaScript's String() and Python's repr() share, so
  // 6.25 prints 6.3 here as in the report. The analysis' tables arrive already printed.
  function fixed(v, digits) {
    if (typeof v === "string") return v;
    if (typeof v !== "number") return fmt(v);
    if (!Number.isFinite(v)) return String(v);
    const text = String(Math.abs(v));
    if (/e/.test(text)) return (v + 0).toFixed(digits).replace(/^-(0\.?0*)$/, "$1");
    const [whole, frac = ""] = text.split(".");
    const padded = (frac + "0".repeat(digits + 1)).slice(0, digits + 1);
    let n = BigInt(whole + padded.slice(0, digits));
    if (padded[digits] >= "5") n += 1n;
    const s = n.toString().padStart(digits + 1, "0");
    const out = digits ? s.slice(0, -digits) + "." + s.slice(-digits) : s;
    return (v < 0 && n !== 0n ? "-" : "") + out;
  }
  window.FIRE_FIXED = fixed; // the browser tests compare it with rounding.fixed
  const pct = (v) => fixed(v, 1);
  const signed = (v) => { const t = fixed(v, 1); return Number(t) > 0 ? "+" + t : t; };
  const isPercent = (column) => /_(pct|pp)$/.test(column);
  // p-values as the report prints them: three decimals, "<0.001" below.
  const pval = (p) => (typeof p !== "number" ? fmt(p) : p < 0.001 ? "<0.001" : fixed(p, 3));
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
  function table(columns, rows, cls, numeric) {
    const percent = columns.map(isPercent);
    const head = el("tr", {}, columns.map((c) => el("th", {}, c)));
    const body = rows.map((r) => el("tr", {}, r.map((v, j) => el("td",
      { class: typeof v === "number" || (numeric && numeric[j]) ? "num" : "" },
      v instanceof Node ? v : percent[j] ? pct(v) : fmt(v)))));
    return el("table", { class: cls || "data" }, el("thead", {}, head), el("tbody", {}, body));
  }
  function analysisTable(name) {
    const t = D.tables.find((x) => x.name === name);
    if (!t) return null;
    const col = Object.fromEntries(t.columns.map((c, i) => [c, i]));
    return { rows: t.rows, get: (row, c) => (col[c] === undefined ? null : row[col[c]]) };
  }

  // ---- attempts ---------------------------------------------------------------------------
  const A = D.attempts;
  const idOf = (i) => A[i][C.id] ||
    `${D.tasks[A[i][C.task]]}/${D.arms[A[i][C.arm]]}/r${A[i][C.replicate]}`;
  const byId = new Map(A.map((_, i) => [idOf(i), i]));
  // Policy words (hooks, fired, the funnel, near-misses) only where an arm runs policies.
  const POLICY = new Set(D.policyArms || []);
  const anyPolicy = POLICY.size > 0;
  const runsPolicies = (arm) => POLICY.has(arm);
  const POLICY_TABLES = new Set(["funnel", "family_funnel", "near_miss"]);
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

  // ---- search (search.js): loaded on the first query ----------------------------------------
  const { loadSearch, searchLoaded, searcher, snippet, SCOPES } = window.FIRE_SEARCH_ENGINE({ D, A, el });

  // ---- overview: the preregistered contrasts first ------------------------------------------
  function contrastLink(name, cohort, label) {
    return el("a", { href: hashLink("grid", { contrast: name, cohort, sort: "diff" }), class: "to-tasks" }, label);
  }
  function headline() {
    const t = analysisTable("contrasts");
    const primary = t && t.rows.find((r) => t.get(r, "role") === "primary");
    if (!primary) {
      return el("section", { class: "headline", id: "headline" }, el("h2", {}, "Primary contrast"),
        el("p", { class: "warn" }, "The analysis computed no primary contrast (see its notes)."));
    }
    const cohort = t.get(primary, "cohort");
    const name = t.get(primary, "contrast");
    const ci = (r) => `[${pct(t.get(r, "ci_low_pp"))}, ${pct(t.get(r, "ci_high_pp"))}]`;
    const est = t.get(primary, "estimate_pp");
    const secondaries = t.rows.filter((r) => t.get(r, "role") === "secondary" && t.get(r, "cohort") === cohort);
    return el("section", { class: "headline", id: "headline" },
      el("h2", {}, "Primary contrast (preregistered)"),
      el("p", { class: "big" }, el("b", {}, name), ` on ${cohort}: `,
        el("b", { class: "estimate" }, est !== null && est !== undefined ? signed(est) + " points" : "unknown"),
        `, 95 % CI ${ci(primary)}, p = ${pval(t.get(primary, "p_value"))} (${fmt(t.get(primary, "p_method"))}), `,
        `${fmt(t.get(primary, "n_tasks"))} tasks · `, contrastLink(name, cohort, "the tasks behind it")),
      secondaries.length ? table(["secondary contrast", `Δ points (${cohort})`, "95 % CI", "p", "Holm p", "tasks", ""],
        secondaries.map((r) => [t.get(r, "contrast"), t.get(r, "estimate_pp") !== null ? signed(t.get(r, "estimate_pp")) : "unknown",
          ci(r), pval(t.get(r, "p_value")), pval(t.get(r, "p_holm")), t.get(r, "n_tasks"),
          contrastLink(t.get(r, "contrast"), cohort, "tasks")])) : null);
  }
  function passRateTable() {
    const t = analysisTable("pass_rates");
    if (!t) return null;
    const seen = [...new Set(t.rows.map((r) => t.get(r, "cohort")))];
    const cohorts = [...seen.filter((c) => c === D.primary.cohort), ...seen.filter((c) => c !== D.primary.cohort)];
    const tasksIn = (c) => Math.max(...t.rows.filter((r) => t.get(r, "cohort") === c).map((r) => t.get(r, "n_tasks") || 0));
    const rows = D.arms.filter((a) => t.rows.some((r) => t.get(r, "arm") === a)).map((arm) =>
      [arm, ...cohorts.map((c) => {
        const r = t.rows.find((x) => t.get(x, "arm") === arm && t.get(x, "cohort") === c);
        return r ? `${pct(t.get(r, "pass_rate_pct"))} [${pct(t.get(r, "ci_low_pct"))}, ${pct(t.get(r, "ci_high_pct"))}]` : "–";
      })]);
    return el("section", { id: "pass-rates" }, el("h2", {}, "Pass rate (%) per arm and cohort, 95 % CI"),
      table(["arm", ...cohorts.map((c) => `${c} (${tasksIn(c)} tasks)${c === D.primary.cohort ? " · primary" : ""}`)], rows));
  }
  // What each arm changes, as the run's prereg.json froze it, with the frozen items' hashes.
  function armsSection() {
    if (!D.design || !D.design.length) return null;
    const role = (arm) => [arm === D.primary.a ? "primary (first)" : null, arm === D.primary.b ? "primary (second)" : null].filter(Boolean).join("");
    return el("section", { id: "arms" }, el("h2", {}, "Arms: what each one changes"),
      el("p", { class: "muted" }, anyPolicy ? "Frozen in the run's prereg.json; policies: the registered arm whose policies run (none: no policy)."
        : "Frozen in the run's prereg.json. No arm of this panel runs a policy."),
      table(["arm", "in the primary", "what it changes", ...(anyPolicy ? ["policies"] : []), "description", "frozen items (SHA-256 prefix)"],
        D.design.map((d) => [d.arm, role(d.arm) || "–", d.changes.join("; "), ...(anyPolicy ? [d.policies] : []), d.description || "–",
          d.items.length ? el("span", {}, d.items.map(([item, sha]) => el("div", {}, item + " ", el("code", {}, sha)))) : "–"]), "data arms"));
  }
  // A sequential plan: every look (a task completed under both arms), its e-value, and why
  // the run stopped (its stopped.json).
  function sequentialSection() {
    const q = D.sequential;
    if (!q) return null;
    if (q.decision === null || q.decision === undefined) {
      return el("section", { id: "sequential" }, el("h2", {}, "Sequential test"), el("p", { class: "warn" }, fmt(q.note)));
    }
    const e = (v) => (typeof v === "number" ? (v >= 1000 ? v.toExponential(2) : fixed(v, 3)) : fmt(v));
    return el("section", { id: "sequential" }, el("h2", {}, "Sequential test (the primary result)"),
      dl([["rule", `${q.method} e-process on ${q.contrast} (${q.cohort}), stop at e ≥ ${q.threshold}` +
          (q.futility_e_below ? `; futility at e ≤ ${q.futility_e_below} after ${q.futility_min_tasks} tasks` : "")],
        ["decision", q.line], ["why the run stopped", q.stop_line || (q.stop_reason ? q.stop_reason : "it did not stop early (ran to its end, or is running)")],
        ["stop reason", q.stop_reason || "–"],
        ["tasks tested / completed / in the frozen order", `${q.tasks_tested} / ${q.tasks_completed} / ${q.tasks_in_order}`],
        ["task order from", q.task_order_from]]),
      q.fixed_size_after_optional_stop ? el("p", { class: "muted" }, "The fixed-size tables were computed after an optional stop: their p-values and intervals are descriptive.") : null,
      folded(`${q.path.length} looks: the e-value after each task`, table(["look", "task", `Δ ${q.contrast} (points)`, "e-value"],
        q.path.map((x, k) => [k + 1, x.task, signed(100 * x.difference), e(x.e_value)]), "data looks"), q.path.length <= 40));
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
    const open = new Set(["contrasts", ...(anyPolicy ? ["funnel", "near_miss"] : [])]);
    const tables = el("section", {}, el("h2", {}, "Tables of the analysis"),
      D.tables.filter((t) => anyPolicy || !POLICY_TABLES.has(t.name)).map((t) => el("details", { class: "table", open: open.has(t.name) || null,
        id: "table-" + t.name }, el("summary", {}, `${t.name} (${t.rows.length} rows)`),
        el("div", { class: "scroll" }, table(t.columns, t.rows, "data", t.numeric)))));
    show(el("h1", {}, D.title), el("p", { class: "muted" }, D.source), sequentialSection(), headline(), passRateTable(),
      armsSection(), el("div", { class: "cols" }, prereg, analysis), figures, tables);
  }

  // ---- task x arm grid ----------------------------------------------------------------------
  const CIVIDIS = [[0, 34, 78], [124, 123, 120], [254, 232, 56]];
  function shade(rate) {
    const [a, b, t] = rate < 0.5 ? [CIVIDIS[0], CIVIDIS[1], rate * 2] : [CIVIDIS[1], CIVIDIS[2], rate * 2 - 1];
    return `rgb(${a.map((x, k) => Math.round(x + (b[k] - x) * t)).join(",")})`;
  }
  // The paired difference of one task: pass rate under a minus under b, in points (null: an
  // arm has no scored attempt on it, so the task is not in the contrast).
  function taskDiff(cells, t, contrast) {
    const [ia, ib] = [D.arms.indexOf(contrast.a), D.arms.indexOf(contrast.b)];
    if (ia < 0 || ib < 0) return null;
    const ca = cells.get(t * D.arms.length + ia);
    const cb = cells.get(t * D.arms.length + ib);
    return ca && cb && ca[1] && cb[1] ? 100 * (ca[0] / ca[1] - cb[0] / cb[1]) : null;
  }
  function gridRow(t, cells, diff) {
    const task = D.tasks[t];
    return el("tr", { "data-task-row": task }, el("th", { class: "task", title: task }, el("a", { href: hashLink("compare", { task }) }, task)),
      D.arms.map((arm, a) => {
        const c = cells.get(t * D.arms.length + a);
        if (!c) return el("td", { class: "cell empty" }, "–");
        const link = el("a", { class: "cell", href: hashLink("attempts", { task, arm }),
          title: `${task} · ${arm}: ${c[0]} of ${c[1]} scored attempts passed` }, `${c[0]}/${c[1]}`);
        link.style.background = shade(c[0] / c[1]);
        link.style.color = c[0] / c[1] > 0.6 ? "#000" : "#fff";
        return el("td", { "data-task": task, "data-arm": arm }, link);
      }),
      diff === undefined ? null : el("td", { class: "diff num" + (diff > 0 ? " up" : diff < 0 ? " down" : ""),
        "data-diff": diff === null ? "" : diff }, diff === null ? "–" : signed(diff)));
  }
  function renderGrid(params) {
    const cells = new Map(D.grid.map(([t, a, s, n]) => [t * D.arms.length + a, [s, n]]));
    // The grid opens on the primary contrast and its cohort; "none" and "every" choose neither.
    const asked = params.has("contrast") ? params.get("contrast") : D.primary.contrast;
    const contrast = D.contrasts.find((c) => c.name === asked) || null;
    const cohortNames = [...D.cohorts, "all"];
    const askedCohort = params.has("cohort") ? params.get("cohort") : D.primary.cohort;
    const cohort = askedCohort === "every" ? "" : askedCohort || "";
    const sort = params.get("sort") || "";
    const warn = [];
    if (asked && asked !== "none" && !contrast) warn.push(`contrast "${asked}" is not in the plan`);
    if (cohort && !cohortNames.includes(cohort)) warn.push(`cohort "${cohort}" is not in this run`);
    const inCohort = (t) => !cohort || cohort === "all" || D.cohorts[D.taskCohort[t]] === cohort;
    const diffs = contrast ? D.tasks.map((_, t) => taskDiff(cells, t, contrast)) : null;
    const set = (k, v) => { const n = new URLSearchParams(params); if (v) n.set(k, v); else n.delete(k); location.hash = "grid?" + n; };
    const tasks = D.tasks.map((_, t) => t).filter(inCohort);
    const order = []; // cohort header rows (strings) and task indices, in display order
    if (contrast && (sort === "diff" || sort === "diff-up")) {
      const sign = sort === "diff" ? -1 : 1;
      const key = (t) => (diffs[t] === null ? Infinity : sign * diffs[t]);
      order.push(...tasks.slice().sort((x, y) => key(x) - key(y) || D.tasks[x].localeCompare(D.tasks[y])));
    } else {
      D.cohorts.forEach((name, ci) => {
        const mine = tasks.filter((t) => D.taskCohort[t] === ci);
        if (mine.length) order.push(`${name} (${mine.length} tasks)`, ...mine);
      });
    }
    const width = D.arms.length + 1 + (contrast ? 1 : 0);
    const body = el("tbody", {}, order.map((x) => typeof x === "string"
      ? el("tr", { class: "cohort" }, el("th", { colspan: width }, x)) : gridRow(x, cells, contrast ? diffs[x] : undefined)));
    // Per-arm totals over the tasks shown: passed / scored attempts, and the pass rate.
    const totals = D.arms.map((_, a) => tasks.reduce((acc, t) => {
      const c = cells.get(t * D.arms.length + a);
      return c ? [acc[0] + c[0], acc[1] + c[1]] : acc;
    }, [0, 0]));
    const shown = contrast ? tasks.filter((t) => diffs[t] !== null) : [];
    const mean = shown.length ? shown.reduce((s, t) => s + diffs[t], 0) / shown.length : null;
    const diffHead = contrast ? el("th", { class: "diff" }, el("a", { href: "#", id: "sort-diff",
      onclick: (e) => { e.preventDefault(); set("sort", sort === "diff" ? "diff-up" : "diff"); } },
    `Δ ${contrast.name} ${sort === "diff" ? "▼" : sort === "diff-up" ? "▲" : "⇅"}`)) : null;
    const head = el("thead", {},
      el("tr", {}, el("th", {}, "task"), D.arms.map((a) => el("th", {}, a)), diffHead),
      el("tr", { class: "totals", id: "totals" }, el("th", {}, `all ${tasks.length} tasks shown`),
        totals.map(([s, n], a) => el("th", { "data-arm": D.arms[a], title: `${s} of ${n} scored attempts passed` },
          n ? `${s}/${n} · ${fixed(100 * s / n, 1)} %` : "–")),
        contrast ? el("th", { class: "num", id: "mean-diff", title: `mean over ${shown.length} tasks` },
          mean === null ? "–" : `mean ${signed(mean)}`) : null));
    const pick = (k, values, current, label) => el("label", {}, label + " ", el("select", { name: k, onchange: (e) => set(k, e.target.value) },
      values.map(([v, text]) => el("option", { value: v, selected: v === current || null }, text))));
    const controls = el("form", { class: "filters", onsubmit: (e) => e.preventDefault() },
      pick("contrast", [["none", "none"], ...D.contrasts.map((c) => [c.name, `${c.name} (${c.role})`])], contrast ? contrast.name : "none", "paired difference"),
      pick("cohort", [["every", "every cohort"], ...cohortNames.map((c) => [c, c === D.primary.cohort ? `${c} (the primary's)` : c])], cohort || "every", "cohort"),
      contrast ? pick("sort", [["", "by cohort"], ["diff", "largest Δ first"], ["diff-up", "smallest Δ first"]], sort, "order") : null);
    show(el("h1", {}, "Tasks × arms"),
      el("p", { class: "muted" }, "Passed / scored attempts of each task under each arm " +
        "(the report's heatmap); the second row sums the tasks shown. A paired difference is a task's pass rate " +
        "under the first arm minus under the second, in points; its mean over a cohort's tasks is the contrast's estimate. " +
        "A cell lists its attempts; a task name opens the side-by-side view."),
      warn.length ? el("p", { class: "warn" }, warn.join("; ")) : null, controls,
      el("table", { class: "grid", id: "grid" }, head, body));
  }

  // ---- attempt list: filters, text search, sortable columns ------------------------------------
  const FILTERS = [
    ["arm", D.arms, (r, v) => D.arms[r[C.arm]] === v],
    ["cohort", D.cohorts, (r, v) => D.cohorts[r[C.cohort]] === v],
    ["family", D.families, (r, v) => r[C.families].some((f) => D.families[f] === v)],
    ["outcome", ["passed", "failed"], (r, v) => (r[C.passed] === 1) === (v === "passed")],
    ["cause", ["none", ...D.causes], (r, v) => (v === "none" ? r[C.cause] === null : D.causes[r[C.cause]] === v)],
    ...(anyPolicy ? [
      ["fired", ["yes", "no"], (r, v) => r[C.fired] !== null && (r[C.fired] === 1) === (v === "yes")],
      ["near_miss", ["yes", "no"], (r, v) => r[C.near_miss] !== null && (r[C.near_miss] === 1) === (v === "yes")]] : []),
  ];
  const SORTABLE = { reward: C.reward, tokens: C.tokens, cost: C.cost, duration: C.duration };
  // Text that may wrap after each ``sep`` (a <wbr>: no character added), so the list fits.
  const breakable = (text, sep) => (text ? el("span", {}, text.split(sep).flatMap((part, k) =>
    (k ? [el("wbr"), sep + part] : [part]))) : "");
  // The list's columns: [header, sort key, cell]; the funnel's only where policies run.
  const COLUMNS = [["task", null, (r) => breakable(D.tasks[r[C.task]], "-"), "wrap"], ["arm", null, (r) => D.arms[r[C.arm]]],
    ["cohort", null, (r) => D.cohorts[r[C.cohort]]], ["outcome", null, (r) => outcome(r)],
    ["reward", "reward", (r) => unknown(r[C.reward]), "num"], ["tokens", "tokens", (r) => unknown(r[C.tokens]), "num"],
    ["cost $", "cost", (r) => unknown(r[C.cost]), "num"], ["seconds", "duration", (r) => unknown(r[C.duration]), "num"],
    ["cause", null, (r) => (r[C.cause] === null ? "none" : D.causes[r[C.cause]])],
    ...(anyPolicy ? [["fired", null, (r) => yesno(r[C.fired])], ["state", null, (r) => yesno(r[C.state])],
      ["behavior", null, (r) => yesno(r[C.behavior])], ["near-miss", null, (r) => yesno(r[C.near_miss])]] : []),
    ["families", null, (r) => breakable(r[C.families].map((f) => D.families[f]).join(", "), "_") || "–", "families"],
    ["flags", null, (r) => [r[C.valid] ? null : "invalid", r[C.replaced] ? "replaced" : null].filter(Boolean).join(", ") || "–"]];
  const HEADERS = [["attempt"], ...COLUMNS.map(([label, key]) => [label, key])];
  function renderAttempts(params) {
    const task = params.get("task") || "";
    const query = (params.get("q") || "").trim();
    const scope = params.get("in") || "everywhere";
    if (query && !searchLoaded()) {
      show(el("h1", {}, "Attempts"), el("p", {}, "Loading the search index…"));
      return loadSearch().then(() => render(), (e) => show(el("p", { class: "warn" }, String(e.message))));
    }
    const shown = Number(params.get("show") || PAGE);
    const active = FILTERS.filter(([name]) => params.get(name));
    const unknownValues = active.filter(([name, values]) => !values.includes(params.get(name)))
      .map(([name, values]) => `${name} "${params.get(name)}" is not in this run (known: ${values.join(", ") || "none"})`);
    if (task && !D.tasks.includes(task)) unknownValues.push(`task "${task}" is not in this run`);
    const scoring = query ? searcher(query, scope) : null;
    const hits = new Map();
    const match = A.map((r, i) => i).filter((i) => {
      if ((task && D.tasks[A[i][C.task]] !== task) || !active.every(([name, , test]) => test(A[i], params.get(name)))) return false;
      if (!scoring) return true;
      const hit = scoring(i);
      if (hit) hits.set(i, hit);
      return !!hit;
    });
    const sortKey = params.get("sort");
    if (scoring && !(sortKey in SORTABLE)) match.sort((x, y) => hits.get(y).score - hits.get(x).score || x - y);
    if (sortKey in SORTABLE) {
      const col = SORTABLE[sortKey], dir = params.get("dir") === "asc" ? 1 : -1;
      // Unknown values sort last either way.
      match.sort((x, y) => {
        const a = A[x][col], b = A[y][col];
        if (a === null || b === null) return (a === null) - (b === null);
        return dir * (a - b) || x - y;
      });
    }
    const change = (name, value) => {
      const next = new URLSearchParams(params);
      if (value) next.set(name, value); else next.delete(name);
      next.delete("show");
      location.hash = "attempts" + (next.toString() ? "?" + next : "");
    };
    const sortBy = (key) => {
      const next = new URLSearchParams(params);
      const dir = sortKey === key && params.get("dir") !== "asc" ? "asc" : "desc";
      next.set("sort", key); next.set("dir", dir); next.delete("show");
      location.hash = "attempts?" + next;
    };
    const controls = el("form", { class: "filters", id: "filters", onsubmit: (e) => {
      e.preventDefault();
      const next = new URLSearchParams(params);
      const q = e.target.elements.q.value.trim();
      if (q) next.set("q", q); else next.delete("q");
      next.set("in", e.target.elements.in.value); next.delete("show");
      location.hash = "attempts?" + next;
    } },
    el("label", {}, "search ", el("input", { type: "search", name: "q", id: "search", value: query,
      placeholder: 'sqlite3 evidence/ or "an exact phrase"', size: 28 })),
    el("select", { name: "in" }, Object.keys(SCOPES).map((s) => el("option", { value: s, selected: s === scope || null }, s === "everywhere" ? "in commands, outputs, messages" : "in " + s))),
    el("button", { type: "submit" }, "search"),
    FILTERS.filter(([, values]) => values.length).map(([name, values]) => el("label", {}, name.replace("_", "-") + " ",
      el("select", { name, onchange: (e) => change(name, e.target.value) },
        el("option", { value: "" }, "any"),
        params.get(name) && !values.includes(params.get(name))
          ? el("option", { value: params.get(name), selected: true }, `${params.get(name)} (not in this run)`) : null,
        values.map((v) => el("option", { value: v, selected: params.get(name) === v || null }, v))))),
    task ? el("span", { class: "chip" }, "task " + task + " ",
      el("button", { type: "button", onclick: () => change("task", "") }, "×")) : null);
    const rows = match.slice(0, shown).map((i) => {
      const r = A[i];
      return el("tr", { "data-index": i }, el("td", { class: "id" }, el("a", { href: "#attempt/" + i }, breakable(idOf(i), "/")),
        query ? el("div", { class: "snippet" }, snippet(hits.get(i))) : null),
      COLUMNS.map(([, , cell, cls]) => el("td", { class: cls || "" }, cell(r))));
    });
    const more = match.length > shown ? el("button", { type: "button", id: "more",
      onclick: () => { const n = new URLSearchParams(params); n.set("show", shown + PAGE); location.hash = "attempts?" + n; } },
    `show ${Math.min(PAGE, match.length - shown)} more`) : null;
    const header = HEADERS.map(([label, key]) => el("th", { "data-sort": key || null }, key
      ? el("a", { href: "#", onclick: (e) => { e.preventDefault(); sortBy(key); } },
        label + (sortKey === key ? (params.get("dir") === "asc" ? " ▲" : " ▼") : " ⇅")) : label));
    show(el("h1", {}, "Attempts"), controls,
      unknownValues.length ? el("p", { class: "warn", id: "unknown-filter" }, unknownValues.join("; ")) : null,
      el("p", { id: "count" }, `${match.length} of ${A.length} attempts` + (query ? ` (search: ${query}, ${scope}; best match first)` : "")),
      el("table", { class: "data", id: "attempt-list" }, el("thead", {}, el("tr", {}, header)), el("tbody", {}, rows)), more);
  }

  const { renderAttempt, renderCompare } = window.FIRE_ATTEMPT_PAGES({ D, A, C, el, show, fmt,
    unknown, yesno, pre, folded, hashLink, dl, table, idOf, byId, loadAttempt, outcome, runsPolicies,
    current: () => token });

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
    const pages = { grid: () => renderGrid(params), attempts: () => renderAttempts(params),
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
