// fire-exp view: the text search over every attempt's commands, outputs and messages. view.js
// calls FIRE_SEARCH_ENGINE with its data; the FIRE_SEARCH shards (data/s/K.js) load on the
// first query. A query is words and "quoted phrases"; each must occur in one step (one
// command, one output, one message), never across two. Results are ranked: the whole query
// typed as one step first, then by how many steps and how often it matches (commands count
// most); the snippet quotes the best-matching step.
"use strict";
window.FIRE_SEARCH_ENGINE = function (V) {
  const { D, A, el } = V;
  const texts = []; // per attempt: [commands, outputs, messages], each a list of lower-cased steps
  let searchLoad = null;
  window.FIRE_SEARCH = function (k, rows) {
    rows.forEach((r, j) => { texts[k * D.shard + j] = r.map((steps) => steps.map((t) => t.toLowerCase())); });
  };
  function loadSearch() {
    if (!searchLoad) {
      const shards = Math.ceil(A.length / D.shard);
      searchLoad = Promise.all([...Array(shards).keys()].map((k) => new Promise((resolve, reject) => {
        const s = el("script", { src: `data/s/${k}.js` });
        s.onload = resolve;
        s.onerror = () => reject(new Error("missing " + s.src));
        document.head.append(s);
      })));
    }
    return searchLoad;
  }
  const searchLoaded = () => searchLoad !== null;
  const SCOPES = { everywhere: [0, 1, 2], commands: [0], outputs: [1], messages: [2] };
  function queryTerms(query) {
    const terms = [];
    const re = /"([^"]*)"|(\S+)/g;
    let m;
    while ((m = re.exec(query.toLowerCase())) !== null) {
      const t = m[1] !== undefined ? m[1].trim() : m[2];
      if (t) terms.push(t);
    }
    return terms;
  }
  const count = (text, term) => { let n = 0, at = -1; while ((at = text.indexOf(term, at + 1)) >= 0) n++; return n; };
  // Score one attempt (0: no match), and the step its snippet quotes.
  function scoreOf(i, terms, whole, parts) {
    const t = texts[i];
    if (!t || !terms.length) return null;
    let best = null, score = 0;
    const found = new Set();
    for (const p of parts) {
      t[p].forEach((step) => {
        let hits = 0;
        terms.forEach((term, k) => { const n = count(step, term); if (n) { found.add(k); hits += n; } });
        if (!hits) return;
        const exact = whole && step.includes(whole);
        const mine = (exact ? 1e6 : 0) + (p === 0 ? 10 : 1) * hits;
        score += mine;
        if (!best || mine > best.score) best = { score: mine, step, term: exact ? whole : terms.find((x) => step.includes(x)) };
      });
    }
    return found.size === terms.length ? { score, best } : null;
  }
  function searcher(query, scope) {
    const terms = queryTerms(query);
    const whole = query.replace(/"/g, "").trim().toLowerCase();
    const parts = SCOPES[scope] || SCOPES.everywhere;
    return (i) => scoreOf(i, terms, whole, parts);
  }
  function snippet(hit) {
    if (!hit || !hit.best) return "";
    const { step, term } = hit.best;
    const at = step.indexOf(term);
    const from = Math.max(0, at - 30), to = Math.min(step.length, at + term.length + 60);
    return (from ? "…" : "") + step.slice(from, to).replace(/\s+/g, " ") + (to < step.length ? "…" : "");
  }

  return { loadSearch, searchLoaded, searcher, snippet, SCOPES };
};
