// The review page: one case at a time, keyboard first. Every value of the run (case text,
// evidence, rationales, ids) is untrusted: it enters the page through textContent and
// attribute setters only, never as HTML.
"use strict";
(function () {
  const root = document.getElementById("review");
  const runId = root.getAttribute("data-run");
  // The fragment: #token=… (the address judge review prints), #case=ID&category=CAT (a
  // link from the report or the terminal). It is read, then dropped from the address bar.
  function fragment() {
    const hash = new URLSearchParams(location.hash.slice(1));
    if (hash.get("token")) sessionStorage.setItem("judge-token", hash.get("token"));
    if (location.hash) history.replaceState(null, "", location.pathname);
    return { case: hash.get("case"), category: hash.get("category") };
  }
  const wanted = fragment();
  let token = sessionStorage.getItem("judge-token") || "";
  // A tab opened from a link has no token: it asks the page's other tabs (same origin only).
  const channel = "BroadcastChannel" in window ? new BroadcastChannel("judge-review-token")
    : null;
  if (channel) channel.addEventListener("message", ev => {
    const m = ev.data || {};
    if (m.ask && token) channel.postMessage({ token: token });
    else if (typeof m.token === "string" && !token) {
      token = m.token;
      sessionStorage.setItem("judge-token", token);
    }
  });
  function askToken() {
    return new Promise(resolve => {
      if (token || !channel) { resolve(); return; }
      channel.postMessage({ ask: true });
      let waited = 0;
      const timer = setInterval(() => {
        waited += 50;
        if (token || waited >= 2000) { clearInterval(timer); resolve(); }
      }, 50);
    });
  }
  function headers() { return token ? { Authorization: "Bearer " + token } : {}; }
  let data = null, order = [], pos = 0, focusCat = 0, reviewer = "";
  const mine = new Map(); // case + "\u0000" + category -> label

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function show(value) {
    if (value === null || value === undefined) return "—";
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }
  function key(c, cat) { return c + "\u0000" + cat; }
  function bandOf(score) {
    const b = data.scale.bands.find(x => x.min <= score && score <= x.max);
    return b ? b.name : null;
  }
  function edge(score) {
    const b = data.scale.bands.find(x => x.min <= score && score <= x.max);
    return b ? Math.min(score - b.min, b.max - score) : 99;
  }
  function status(text, bad) {
    const line = document.getElementById("status");
    line.textContent = text;
    line.classList.toggle("bad", Boolean(bad));
  }
  // The samples' spread (max - min) beside the score they were combined into, when known.
  function spread(value) {
    return value === null || value === undefined ? "" : ", spread " + value;
  }
  // A band as the report draws it: a chip coloured by the band's place on the rubric's scale.
  function bandChip(name) {
    if (name === null || name === undefined) return el("span", "muted", "—");
    const at = data.scale.bands.findIndex(b => b.name === name);
    return el("span", "band band-" + (at >= 0 ? at : "x"), name);
  }

  function filtered() {
    const f = document.getElementById("filter").value;
    let cases = data.cases.slice();
    if (f === "disagree") {
      cases = cases.filter(c => c.categories.some(cat => {
        const lb = mine.get(key(c.id, cat.category));
        return lb && (lb.agree === false || (lb.score !== null && lb.score !== undefined &&
          cat.finalScore !== null && bandOf(lb.score) !== bandOf(cat.finalScore)));
      }));
    } else if (f === "borderline") {
      cases = cases.filter(c => c.categories.some(cat =>
        cat.finalScore !== null && edge(cat.finalScore) <= 3));
    } else if (f === "judges") {
      cases = cases.filter(c => c.other && c.other.overallScore !== null);
      cases.sort((a, b) => Math.abs(b.other.overallScore - (b.overallScore || 0)) -
        Math.abs(a.other.overallScore - (a.overallScore || 0)));
    }
    return cases;
  }

  function labelledCount() {
    return data.cases.filter(c => data.scale.categories.every(cat =>
      mine.has(key(c.id, cat.id)))).length;
  }

  function render() {
    const view = document.getElementById("case");
    view.replaceChildren();
    document.getElementById("progress").textContent =
      labelledCount() + " of " + data.cases.length + " cases labelled by " + (reviewer || "—");
    if (!order.length) { view.append(el("p", "empty", "No case matches the filter.")); return; }
    pos = Math.max(0, Math.min(pos, order.length - 1));
    const c = order[pos];
    localStorage.setItem("judge-review-pos:" + runId, c.id);
    view.setAttribute("data-case", c.id);
    view.append(caseHead(c));
    const material = el("div", "material card");
    material.append(el("h3", "", "Input"), el("pre", "input", show(c.input)));
    material.append(el("h3", "", "Output"), el("pre", "output", show(c.output)));
    material.append(evidenceBlock(c));
    if (c.transcript) material.append(transcriptBlock(c.transcript));
    const labels = el("div", "labels");
    c.categories.forEach((cat, i) => labels.append(categoryBlock(c, cat, i)));
    const grid = el("div", "case-grid");
    grid.append(material, labels);
    view.append(grid);
  }

  // The case's id (cut with an ellipsis when long, whole in its title), where it is in the
  // list, its overall score and band, and another judge's score when the run had a panel.
  function caseHead(c) {
    const head = el("div", "case-head");
    const name = el("h2", "case-id");
    const id = el("span", "clip u", c.id);
    id.title = c.id;
    name.append(id);
    const overall = el("span", "overall", "overall " + show(c.overallScore) + " ");
    overall.append(bandChip(c.band));
    head.append(name, el("span", "muted", (pos + 1) + " of " + order.length), overall);
    if (c.combined) head.append(el("span", "combined muted", c.combined.method + " of " +
      c.combined.count + " " + c.combined.of + spread(c.spread)));
    if (c.other) head.append(el("span", "other muted", show(c.other.model) + ": " +
      show(c.other.overallScore)));
    return head;
  }

  function evidenceBlock(c) {
    const cited = new Set();
    c.categories.forEach(cat => (cat.evidence || []).forEach(id => cited.add(id)));
    const box = el("div", "");
    box.append(el("h3", "", "Evidence"));
    const ev = el("ul", "evidence");
    c.evidence.forEach(item => {
      const li = el("li", cited.has(item.id) ? "item cited" : "item");
      li.setAttribute("data-id", item.id);
      li.append(el("code", "", item.id), el("span", "group muted", item.group + " "),
        el("b", "", item.title), el("div", "excerpt", item.excerpt));
      ev.append(li);
    });
    if (!c.evidence.length) ev.append(el("li", "muted", "none stored"));
    box.append(ev);
    return box;
  }

  // The case's conversation and span tree (judge.report.transcripts, served by the API),
  // as the report shows them: turns and spans under their ids, the cited ones marked.
  function transcriptBlock(t) {
    const box = el("div", "transcript");
    if (t.turns && t.turns.length) {
      const conv = el("div", "conversation");
      conv.append(el("h3", "", "Conversation"));
      t.turns.forEach(turn => {
        const d = el("div", "turn turn-" + String(turn.role).replace(/[^a-z]/g, "") +
          (turn.cited ? " cited" : ""));
        d.setAttribute("data-id", turn.id);
        const head = el("div", "");
        head.append(el("code", "", turn.id), el("span", "", " " + turn.label));
        if (turn.cited) head.append(el("span", "mark", " cited"));
        d.append(head);
        if (turn.text) d.append(el("pre", "", turn.text));
        conv.append(d);
      });
      if (t.turnsNotShown) conv.append(el("p", "muted", t.turnsNotShown +
        " more turns not shown (the judge saw the same)"));
      box.append(conv);
    }
    if (t.spans && t.spans.length) {
      const tree = el("div", "span-tree");
      tree.append(el("h3", "", "Trace"));
      // Rows come in tree order with their nesting level: each span holds its children
      // in its .span-kids, so collapsing a span hides its subtree (as the report does).
      const holders = [tree];
      t.spans.forEach(sp => {
        const level = Math.max(0, Math.min(Number(sp.level) || 0, holders.length - 1));
        holders.length = level + 1;
        const d = el("details", "span span-" + String(sp.status).replace(/[^a-z]/g, "") +
          (sp.cited ? " cited" : ""));
        d.setAttribute("data-id", sp.id);
        d.setAttribute("data-level", String(level));
        if (sp.open) d.open = true;
        const sum = el("summary", "");
        sum.append(el("code", "", sp.id), el("span", "", " " + sp.title + " "),
          el("span", "muted", sp.kind + " · " + sp.status +
            (sp.durationMs !== null && sp.durationMs !== undefined ? " · " + sp.durationMs + " ms" : "") +
            (sp.depth > level + 1 ? " · depth " + sp.depth : "")));
        if (sp.cited) sum.append(el("span", "mark", " cited"));
        d.append(sum);
        if (sp.text) d.append(el("pre", "", sp.text));
        if (sp.refs && Object.keys(sp.refs).length) d.append(el("div", "muted", show(sp.refs)));
        const kids = el("div", "span-kids");
        d.append(kids);
        holders[level].append(d);
        holders.push(kids);
      });
      box.append(tree);
    }
    return box;
  }

  function categoryBlock(c, cat, i) {
    const box = el("section", i === focusCat ? "category focused" : "category");
    box.setAttribute("data-category", cat.category);
    const title = el("h3", "", cat.category + " ");
    title.append(bandChip(cat.band));
    box.append(title);
    const about = data.scale.categories.find(x => x.id === cat.category);
    if (about) box.append(el("p", "definition", about.definition));
    box.append(el("p", "scores", "AI " + show(cat.aiScore) + (cat.level ? " (" + cat.level + ")" : "")
      + spread(cat.spread) + " · deterministic " + show(cat.deterministicScore) + " · final " +
      show(cat.finalScore) + spread(cat.finalSpread)));
    if (cat.rationale) box.append(el("p", "rationale", cat.rationale));
    const lb = mine.get(key(c.id, cat.category)) || {};
    const choices = el("div", "choices");
    const levels = data.scale.style === "levels";
    const options = levels ? data.scale.levels.map(l => ({ name: l.name, level: l.name }))
      : data.scale.bands.map(b => ({ name: b.name, score: Math.round((b.min + b.max) / 2) }));
    options.forEach((o, n) => {
      const b = el("button", "choice");
      b.append(el("kbd", "", String(n + 1)), " " + o.name);
      b.type = "button";
      b.setAttribute("data-choice", o.name);
      const on = levels ? lb.level === o.level : (lb.score !== undefined && lb.score !== null
        && bandOf(lb.score) === o.name);
      if (on) b.classList.add("chosen");
      b.addEventListener("click", () => { focusCat = i; choose(c, cat.category, o); });
      choices.append(b);
    });
    box.append(choices);
    const verdicts = el("div", "verdicts");
    if (!levels) {
      const score = el("input", "score");
      score.type = "number"; score.min = "0"; score.max = "100"; score.placeholder = "score";
      score.setAttribute("aria-label", "exact score, 0 to 100");
      score.value = lb.score === undefined || lb.score === null ? "" : String(lb.score);
      score.addEventListener("change", () => {
        const v = parseInt(score.value, 10);
        if (v >= 0 && v <= 100) save(c, cat.category, { score: v });
      });
      verdicts.append(score);
    }
    ["agree", "disagree"].forEach(word => {
      const b = el("button", "verdict", word);
      b.type = "button";
      b.setAttribute("data-verdict", word);
      if (lb.agree === (word === "agree")) b.classList.add("chosen");
      b.addEventListener("click", () => save(c, cat.category, { agree: word === "agree" }));
      verdicts.append(b);
    });
    box.append(verdicts);
    const note = el("textarea", "note");
    note.value = lb.note || "";
    note.placeholder = "note";
    note.addEventListener("change", () => save(c, cat.category, { note: note.value }));
    box.append(note);
    return box;
  }

  function choose(c, category, o) {
    save(c, category, o.level !== undefined ? { level: o.level } : { score: o.score });
  }

  // Saves run one after another, each built from the labels as the previous one left
  // them: a click during a save never sends a stale label over a newer one.
  let queue = Promise.resolve(), saves = 0;
  function save(c, category, change) {
    if (!reviewer) { status("enter your name first", true); return; }
    queue = queue.then(() => send(c, category, change))
      .catch(e => status("not saved: " + e, true));
  }

  async function send(c, category, change) {
    const before = mine.get(key(c.id, category)) || {};
    const label = { case: c.id, category: category, score: before.score ?? null,
      level: before.level ?? null, agree: before.agree ?? null, note: before.note || "",
      ...change };
    const resp = await fetch("/api/review/" + encodeURIComponent(runId) + "/labels", {
      method: "POST", headers: { ...headers(), "Content-Type": "application/json" },
      body: JSON.stringify({ reviewer: reviewer, labels: [label] }) });
    saves += 1;
    root.setAttribute("data-saves", String(saves));
    if (!resp.ok) { status("not saved: " + resp.status, true); return; }
    const saved = await resp.json();
    saved.labels.forEach(l => mine.set(key(l.case, l.category), l));
    status("saved " + c.id + " / " + category);
    render();
  }

  function keys(ev) {
    const t = ev.target;
    if (t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT" || t.tagName === "SELECT")) {
      if (ev.key === "Escape") t.blur();
      return;
    }
    if (!order.length) return;
    const c = order[pos];
    if (ev.key === "j" || ev.key === "ArrowRight") { pos += 1; focusCat = 0; render(); }
    else if (ev.key === "k" || ev.key === "ArrowLeft") { pos -= 1; focusCat = 0; render(); }
    else if (ev.key === "ArrowDown") { focusCat = Math.min(focusCat + 1, c.categories.length - 1); render(); }
    else if (ev.key === "ArrowUp") { focusCat = Math.max(focusCat - 1, 0); render(); }
    else if (ev.key === "a" || ev.key === "d") {
      save(c, c.categories[focusCat].category, { agree: ev.key === "a" });
    } else if (ev.key === "n") {
      const notes = document.querySelectorAll("#case .note");
      if (notes[focusCat]) { notes[focusCat].focus(); ev.preventDefault(); }
    } else if (/^[1-9]$/.test(ev.key)) {
      const n = parseInt(ev.key, 10) - 1;
      const levels = data.scale.style === "levels";
      const list = levels ? data.scale.levels : data.scale.bands;
      if (n < list.length) {
        const o = levels ? { level: list[n].name }
          : { score: Math.round((list[n].min + list[n].max) / 2) };
        choose(c, c.categories[focusCat].category, o);
      }
    } else { return; }
    ev.preventDefault();
  }

  function reorder(keepId) {
    order = filtered();
    const at = order.findIndex(c => c.id === keepId);
    pos = at >= 0 ? at : 0;
    render();
  }

  function loadMine() {
    mine.clear();
    data.labels.filter(l => l.reviewer === reviewer)
      .forEach(l => mine.set(key(l.case, l.category), l));
  }

  // Open at a case (and category) a link named; every filter shows it.
  function goTo(caseId, category) {
    const c = data.cases.find(x => x.id === caseId);
    if (!c) { status("case " + caseId + " is not in run " + runId, true); return false; }
    if (!filtered().some(x => x.id === caseId)) document.getElementById("filter").value = "all";
    order = filtered();
    pos = order.findIndex(x => x.id === caseId);
    const at = c.categories.findIndex(x => x.category === category);
    focusCat = at >= 0 ? at : 0;
    render();
    return true;
  }

  async function start() {
    await askToken();
    const resp = await fetch("/api/review/" + encodeURIComponent(runId), { headers: headers() });
    if (!resp.ok) {
      status("cannot load run: " + resp.status + (resp.status === 401 ? " (open the address " +
        "judge review printed, with its #token, in a tab; links then work in any tab)" : ""),
      true);
      return;
    }
    data = await resp.json();
    document.getElementById("title").textContent =
      "Review " + data.run.id + " · " + data.run.suite + " · " + data.run.rubric;
    document.getElementById("about").textContent = "judged by " +
      (data.run.models.length ? data.run.models.join(", ") : "no model (deterministic only)");
    const alpha = Object.entries(data.alpha).map(([k, v]) =>
      k + " α=" + (v === null ? "—" : v.toFixed(2))).join(", ");
    const beside = (data.people || []).map((p) => {
      const own = p.byReviewer.map((r) => r.withOthers.kendallTau).filter((v) => v !== null);
      const judge = p.byReviewer.map((r) => r.judgeWithOthers.kendallTau)
        .filter((v) => v !== null);
      const mean = judge.length ? (judge.reduce((a, b) => a + b, 0) / judge.length)
        .toFixed(2) : "—";
      const range = own.length ? Math.min(...own).toFixed(2) + "–" +
        Math.max(...own).toFixed(2) : "—";
      return " · " + p.category + ": judge τ with the others " + mean + ", reviewers " + range;
    }).join("");
    document.getElementById("alpha").textContent = " · between reviewers: " + alpha + beside;
    const name = document.getElementById("reviewer");
    reviewer = localStorage.getItem("judge-reviewer") || "";
    name.value = reviewer;
    name.addEventListener("change", () => {
      reviewer = name.value.trim();
      localStorage.setItem("judge-reviewer", reviewer);
      loadMine(); render();
    });
    loadMine();
    document.getElementById("filter").addEventListener("change", () => reorder(null));
    document.addEventListener("keydown", keys);
    const last = localStorage.getItem("judge-review-pos:" + runId);
    reorder(last);
    if (wanted.case) goTo(wanted.case, wanted.category);
    window.addEventListener("hashchange", () => {
      const next = fragment();
      if (next.case) goTo(next.case, next.category);
    });
    document.documentElement.setAttribute("data-ready", "1");
  }
  start();
})();
