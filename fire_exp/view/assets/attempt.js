// fire-exp view: the attempt page and side by side. view.js calls FIRE_ATTEMPT_PAGES with
// its helpers and data; every text from the run goes into the page as a text node.
"use strict";
window.FIRE_ATTEMPT_PAGES = function (V) {
  const { D, A, C, el, show, fmt, unknown, yesno, pre, folded, hashLink, dl, table, idOf, byId,
    loadAttempt, outcome, current, runsPolicies } = V;
  const FOLD = 600; // characters of a message shown before it folds

  // ---- one attempt: the conversation, commands and policy events in order --------------------
  function eventBox(ev) {
    const what = ev.decision === "deny" ? "denied the command" : ev.decision === "instruct" ? "instruction" : ev.decision;
    return el("div", { class: "event " + (ev.decision || ""), "data-event": ev.event },
      el("div", { class: "event-head" }, el("b", {}, `policy · ${fmt(ev.event)} · ${fmt(ev.family)} / ${fmt(ev.rule)}`),
        ` — ${fmt(what)}`), pre(ev.text, "event-text"));
  }
  function messageText(text) {
    if (text.length <= FOLD) return pre(text, "message-text");
    return el("div", {}, pre(text.slice(0, FOLD) + " …", "message-text head"),
      folded(`show the whole message (${text.length} characters)`, pre(text, "message-text full")));
  }
  const ROLE = { assistant: "agent", user: "user", system: "system prompt", tool: "tool result", harness: "harness" };
  // A message's tool calls the command log holds show as the steps that follow it; the
  // others (a malformed call, a CLI's file read, a call whose command never ran) show here.
  const shownCalls = (m) => [...m.calls, ...m.commands.slice(m.bound || 0)];
  const isShown = (s) => s.kind !== "message" || s.text || shownCalls(s).length;
  function messageItem(m, tag) {
    const label = [ROLE[m.role] || m.role, m.label].filter(Boolean).join(" · ");
    const calls = shownCalls(m);
    return el(tag, { class: `item message ${m.role}`, "data-role": m.role },
      el("div", { class: "step-head" }, label),
      m.text ? messageText(m.text) : null,
      calls.length ? el("ul", { class: "calls" }, calls.map((c) => el("li", {}, el("code", {}, c.length > 300 ? c.slice(0, 300) + " …" : c)))) : null);
  }
  function stepItem(s, tag) {
    if (s.kind === "message") return messageItem(s, tag);
    const events = s.events.map(eventBox);
    if (s.kind === "start") return el(tag, { class: "item step start", "data-step": 0 }, el("div", { class: "step-head" }, "session start"), events);
    if (s.kind === "stop") {
      return el(tag, { class: "item step stop", "data-step": s.step }, el("div", { class: "step-head" },
        `agent stops (after command ${s.step})`), events);
    }
    if (s.kind === "edit") {
      return el(tag, { class: "item step edit", "data-step": s.step }, el("div", { class: "step-head" }, "file edit ",
        el("span", { class: "badge " + (s.exit_code === 0 ? "ok" : "warnb") }, s.exit_code === 0 ? "done" : `exit ${unknown(s.exit_code)}`)),
      pre(`${s.command} ${s.paths.join(" ")}`, "cmd"), events);
    }
    const status = s.denied ? el("span", { class: "badge fail" }, "denied") :
      el("span", { class: "badge " + (s.exit_code === 0 ? "ok" : "warnb") }, `exit ${unknown(s.exit_code)}`);
    return el(tag, { class: "item step command", "data-step": s.step },
      el("div", { class: "step-head" }, `command ${s.step} `, status), pre(s.command, "cmd"),
      events, folded(`output (${s.output.length} characters)`, pre(s.output, "output")));
  }
  function counts(items) {
    const n = (f) => items.filter(f).length;
    const events = items.reduce((k, s) => k + (s.events ? s.events.length : 0), 0);
    const parts = [[n((s) => s.kind === "command"), "command"], [n((s) => s.kind === "edit"), "file edit"],
      [n((s) => s.kind === "stop"), "stop"], [n((s) => s.kind === "message" && s.role === "assistant" && isShown(s)), "agent message"],
      [events, "policy event"]];
    return parts.filter(([k]) => k).map(([k, w]) => `${k} ${w}${k === 1 ? "" : "s"}`).join(", ") || "empty";
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
  function attemptHead(i, d) {
    return el("div", { class: "attempt-head" }, outcome(A[i]), ` reward ${d.reward === null || d.reward === undefined ? "unknown (none read)" : d.reward}`,
      d.cause ? el("span", { class: "badge warnb" }, d.cause) : null,
      d.valid === false ? el("span", { class: "badge fail" }, "invalid") : null,
      d.near_miss && runsPolicies(d.arm) ? el("span", { class: "badge warnb" }, "near-miss") : null);
  }
  function timelineList(d) {
    return [d.log_problems.length ? el("ul", { class: "warn" }, d.log_problems.map((p) => el("li", {}, p))) : null,
      el("ol", { class: "timeline" }, d.timeline.filter(isShown).map((s) => stepItem(s, "li"))),
      d.unplaced.length ? el("div", {}, el("h3", {}, "Policy events not placed on a step"), d.unplaced.map(eventBox)) : null];
  }
  function verifierSection(d, compact) {
    const v = d.verifier || {};
    return el("section", {}, el("h2", {}, "Verifier"), dl([["reward", unknown(d.reward)], ["reward.txt", v["reward.txt"]]]),
      folded("test output", pre(v["test-stdout.txt"], "output"), !compact), folded("result.json", pre(v["result.json"], "output")));
  }
  function attemptView(i, d) {
    const head = attemptHead(i, d);
    if (!D.hasLogs) {
      return el("div", { class: "attempt" }, head, dl(Object.entries(d).map(([k, v]) => [k, unknown(v)])));
    }
    const placed = d.timeline.reduce((k, s) => k + (s.events ? s.events.length : 0), 0) + d.unplaced.length;
    const t = d.timings, u = d.usage, l = d.lineage;
    const policy = runsPolicies(d.arm);
    return el("div", { class: "attempt" }, head,
      el("section", {}, el("h2", {}, "Instruction"),
        d.instruction === null ? el("p", { class: "muted" }, "task folder not found; instruction not shown") : folded("instruction.md", pre(d.instruction, "instruction"), true)),
      policy ? el("section", {}, el("h2", {}, "Funnel coding per family"), familyTable(d)) : null,
      el("section", {}, el("h2", { id: "timeline-head" }, `Timeline: ${counts(d.timeline)}`),
        el("p", { class: "muted" }, policy ? "What the agent said, the commands it ran and the policy's events, in the order they happened."
          : `What the agent said and the commands it ran, in the order they happened (arm ${d.arm} runs no policy).`),
        timelineList(d)),
      verifierSection(d, false),
      el("div", { class: "cols" },
        el("section", {}, el("h2", {}, "Timings, tokens, cost"), dl([["environment s", t.environment_s], ["agent s", t.agent_s],
          ["verifier s", t.verifier_s], ["total s", t.total_s], ["input tokens", u.input_tokens], ["output tokens", u.output_tokens],
          ["model calls", u.model_calls || "not reported"], ["cost USD", u.cost_usd], ["model", u.model], ["route", u.route]])),
        el("section", {}, el("h2", {}, "Lineage and validity"), dl([["replaces", lineageLink(l.replaces)],
          ["replaced by", lineageLink(l.replaced_by)], ["lineage cause", l.cause], ["valid", yesno(d.valid)],
          ["invalid reason", d.invalid_reason], ["cause", d.cause || "none"], ["error", d.error], ["gave up", yesno(d.gave_up)]])),
        el("section", {}, el("h2", {}, "Attempt"), dl([["agent", d.agent], ["tier", d.tier], ["environment", d.environment],
          ["seed", el("code", { id: "seed" }, fmt(d.seed))], ["arm order", d.order],
          ...(policy ? [["policy hook calls", d.events], ["policy decisions (not allow)", d.decisions], ["policy events in the timeline", placed]] : []),
          ["started", d.started_at], ["finished", d.finished_at], ["config hash", d.config_hash], ["log folder", d.log_dir]]))),
      folded("setup.log", pre(d.setup_log, "output")), folded(`log files (${(d.log_files || []).length})`,
        el("ul", {}, (d.log_files || []).map((f) => el("li", {}, f)))));
  }
  function siblings(i) {
    const t = A[i][C.task];
    return el("p", { class: "siblings" }, "Same task: ", A.map((r, j) => j).filter((j) => A[j][C.task] === t)
      .sort((x, y) => A[x][C.arm] - A[y][C.arm] || A[x][C.replicate] - A[y][C.replicate] || x - y).map((j) => el("a", { href: "#attempt/" + j, class: j === i ? "current" : "" }, `${D.arms[A[j][C.arm]]} r${A[j][C.replicate]}`)));
  }
  function renderAttempt(i) {
    if (!(i >= 0 && i < A.length)) { show(el("p", { class: "warn" }, "No such attempt.")); return; }
    const mine = current(), row = A[i], task = D.tasks[row[C.task]], arm = D.arms[row[C.arm]];
    const title = el("h1", {}, idOf(i));
    const sub = el("p", { class: "muted" }, `${task} · ${arm} · ${D.cohorts[row[C.cohort]]} · replicate ${row[C.replicate]} · `,
      el("a", { href: hashLink("compare", { task, a: arm }) }, "side by side"));
    show(title, sub, siblings(i), el("p", {}, "Loading attempt…"));
    return loadAttempt(i).then((d) => { if (mine === current()) show(title, sub, siblings(i), attemptView(i, d)); },
      (e) => { if (mine === current()) show(title, el("p", { class: "warn" }, String(e.message))); });
  }

  // ---- side by side, aligned on the first policy event or the first divergence ---------------
  const signature = (s) => s.kind === "message" ? `m:${s.role}:${s.text}:${s.calls.join("\n")}` : `${s.kind}:${s.command || ""}`;
  function anchor(left, right) {
    const fired = (items) => items.findIndex((s) => s.kind !== "message" && s.kind !== "start" && s.events.length);
    const [fl, fr] = [fired(left), fired(right)];
    if (fl >= 0 && fr >= 0) return [fl, fr, "first policy event after the start"];
    const n = Math.min(left.length, right.length);
    let k = 0;
    while (k < n && signature(left[k]) === signature(right[k])) k++;
    if (fl >= 0 || fr >= 0) {
      // One side's policy fired, the other's had nothing to fire on: align the event with the
      // step of the same number on the other side.
      const [items, at, other] = fl >= 0 ? [left, fl, right] : [right, fr, left];
      const step = items[at].step, kind = items[at].kind;
      const j = other.findIndex((s) => s.kind === kind && s.step === step);
      if (j >= 0) return fl >= 0 ? [at, j, "first policy event"] : [j, at, "first policy event"];
    }
    return [k, k, k < n ? "first divergence" : "identical up to the shorter one's end"];
  }
  function alignedRows(dl_, dr) {
    const [left, right] = [dl_.timeline.filter(isShown), dr.timeline.filter(isShown)];
    const [al, ar, why] = anchor(left, right);
    const offL = Math.max(0, ar - al), offR = Math.max(0, al - ar);
    const rows = Math.max(left.length + offL, right.length + offR);
    const cells = [];
    for (let r = 0; r < rows; r++) {
      const at = r === al + offL;
      for (const [items, off, side] of [[left, offL, "left"], [right, offR, "right"]]) {
        const s = items[r - off];
        const cell = s ? stepItem(s, "div") : el("div", { class: "item gap" }, "");
        cell.classList.add(side);
        if (at) cell.classList.add("anchor");
        cell.dataset.row = r;
        cells.push(cell);
      }
    }
    return el("div", {}, el("p", { class: "muted", id: "aligned-on" }, `Aligned on the ${why} (row ${al + offL + 1}).`),
      el("div", { class: "aligned", id: "aligned" }, cells));
  }
  function renderCompare(params) {
    // Opens on the primary contrast's pair, on the first task of its cohort.
    const inPrimary = (t) => D.primary.cohort === "all" || D.cohorts[D.taskCohort[t]] === D.primary.cohort;
    const task = params.get("task") || D.tasks[D.tasks.findIndex((_, t) => inPrimary(t))] || D.tasks[0];
    const has = (arm) => D.arms.includes(arm);
    const a = params.get("a") || (has(D.primary.a) ? D.primary.a : D.arms[0]);
    const b = params.get("b") || (has(D.primary.b) && D.primary.b !== a ? D.primary.b : null) ||
      (a !== D.primary.a && has(D.primary.a) ? D.primary.a : null) || D.arms.find((x) => x !== a) || a;
    const set = (k, v) => { const n = new URLSearchParams(params); n.set("task", task); n.set("a", a); n.set("b", b);
      if (k !== "ia" && k !== "ib") { n.delete("ia"); n.delete("ib"); }
      n.set(k, v); location.hash = "compare?" + n; };
    const pick = (k, values, current) => el("label", {}, k + " ", el("select", { name: k, onchange: (e) => set(k, e.target.value) },
      values.includes(current) ? null : el("option", { value: current, selected: true }, `${current} (not in this run)`),
      values.map((v) => el("option", { value: v, selected: v === current || null }, v))));
    const mine = current();
    const chosen = (arm, key) => {
      const idx = A.map((r, j) => j).filter((j) => D.tasks[A[j][C.task]] === task && D.arms[A[j][C.arm]] === arm);
      const wanted = Number(params.get(key));
      return [idx, idx.includes(wanted) ? wanted : (idx.length ? idx[0] : -1)];
    };
    const sides = [[a, "ia"], [b, "ib"]].map(([arm, key]) => [arm, key, ...chosen(arm, key)]);
    const headOf = ([arm, key, idx, c]) => el("div", { class: "side" }, el("h2", {}, arm), el("p", {}, idx.map((j) =>
      el("a", { href: "#", class: j === c ? "current" : "", onclick: (e) => { e.preventDefault(); set(key, j); } },
        `r${A[j][C.replicate]}${A[j][C.passed] ? " ✓" : " ✗"} `)), c >= 0 ? [" · ", el("a", { href: "#attempt/" + c }, "open this attempt")] : null),
      c < 0 ? el("p", { class: "muted" }, "no attempt of this arm on this task") : el("div", { class: "slot" }, "Loading…"));
    const heads = sides.map(headOf);
    const body = el("div", {});
    show(el("h1", {}, "Side by side"),
      el("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, pick("task", D.tasks, task), pick("a", D.arms, a), pick("b", D.arms, b)),
      el("div", { class: "compare" }, heads), body);
    const [ia, ib] = [sides[0][3], sides[1][3]];
    if (ia < 0 || ib < 0) return null;
    return Promise.all([loadAttempt(ia), loadAttempt(ib)]).then(([da, db]) => {
      if (mine !== current()) return;
      [[da, ia, 0], [db, ib, 1]].forEach(([d, i, k]) => heads[k].querySelector(".slot").replaceChildren(...[attemptHead(i, d),
        !D.hasLogs ? dl(Object.entries(d).map(([x, v]) => [x, unknown(v)])) : runsPolicies(d.arm) ? familyTable(d) : null].filter(Boolean)));
      if (!D.hasLogs) return;
      body.replaceChildren(el("h2", {}, `Timelines: ${counts(da.timeline)} · ${counts(db.timeline)}`), alignedRows(da, db),
        el("div", { class: "compare" }, verifierSection(da, true), verifierSection(db, true)));
    }, (e) => { if (mine === current()) body.replaceChildren(el("p", { class: "warn" }, String(e.message))); });
  }

  return { renderAttempt, renderCompare };
};
