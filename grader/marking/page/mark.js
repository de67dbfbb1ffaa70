// The marking page (attnkit mark): one part at a time across the class.
//
// Student text (answers, automatic messages, TAs' comments, names) reaches the DOM only
// through textContent: it is hostile input. innerHTML is used for the key's own texts only
// (prompts, rubric texts and notes, the guide), which the server rendered (fields *_html).
// Every save names the version the grader's view started from; a 409 shows the other
// grader's grade and never overwrites it without the grader asking.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  // The token comes in the printed address (?token=) and is kept in sessionStorage, which
  // only this origin (this port) reads and which lasts as long as the tab: a reload still
  // works. Never a cookie: a browser sends a host's cookies to every port of it. Out of the
  // address bar at once (a shared screen, a bookmark, the history would show it).
  const TOKEN = (() => {
    const given = new URLSearchParams(location.search).get("token");
    if (given) sessionStorage.setItem("attnkit-token", given);
    if (location.search) history.replaceState(null, "", location.pathname + location.hash);
    return sessionStorage.getItem("attnkit-token") || "";
  })();
  const HAND = "hand";
  const S = {
    parts: [], part: null, answers: [], byStudent: new Map(), groups: [],
    mode: "answers", index: 0, gindex: 0, names: false, grader: "",
    view: null, dirty: false, detail: null, shown: 0,
    basis: new Map(),      // student → the version the grader's view of it started from
    epoch: new Map(),      // student → bumped by a conflict: saves queued before it are dropped
    pending: 0, chain: Promise.resolve(), conflict: null,
  };

  // --- small helpers --------------------------------------------------------------------

  function text(el, value) { el.textContent = value == null ? "" : String(value); }
  function trusted(el, html) { el.innerHTML = html || ""; }   // the key's texts, rendered by the server
  function make(tag, value, cls) {
    const el = document.createElement(tag);
    if (value !== undefined) el.textContent = String(value);
    if (cls) el.className = cls;
    return el;
  }
  function pts(x) { return (x > 0 ? "+" : "") + Number(x).toString(); }
  function points(x) { return `${+Number(x).toFixed(4)} ${Math.abs(x) === 1 ? "point" : "points"}`; }
  function clamp(x, lo, hi) { return Math.min(Math.max(x, lo), hi); }

  async function api(method, path, body) {
    const init = { method, headers: { "X-Attnkit-Token": TOKEN } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try { response = await fetch(path, init); }
    catch (err) { return { status: 0, data: { error: "the marking server does not answer (stopped?)" } }; }
    let data;
    try { data = await response.json(); }
    catch (err) { data = { error: `${response.status} ${response.statusText}` }; }
    return { status: response.status, data };
  }

  function fatal(message) {
    text($("fatal"), message);
    $("fatal").hidden = false;
    document.body.dataset.state = "error";
  }

  function setStatus(message, warn) {
    text($("status"), message);
    $("status").className = warn ? "warn" : "";
  }

  // --- where we are: the URL's hash keeps it across a reload --------------------------------

  function readHash() {
    // A malformed escape (#%E0%A4%A) would throw here and leave the page blank: read as none.
    let hash = "";
    try { hash = decodeURIComponent(location.hash.slice(1)); } catch (err) { hash = ""; }
    const [problem, part, mode, n] = hash.split("/");
    return { problem, part, mode, n: Math.max(parseInt(n, 10) || 1, 1) - 1 };
  }

  function writeHash() {
    const n = S.mode === "groups" ? S.gindex + 1 : S.index + 1;
    const hash = "#" + [S.part.problem, S.part.part, S.mode, n].map(encodeURIComponent).join("/");
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  // --- the current target: one answer, or one group of identical answers -------------------

  function current() {
    if (S.mode === "groups") {
      const g = S.groups[S.gindex];
      return g ? { key: "g:" + g.key, group: g, members: g.members.map((id) => S.byStudent.get(id)) } : null;
    }
    const a = S.answers[S.index];
    return a ? { key: "a:" + a.student, group: null, members: [a] } : null;
  }

  function viewOf(answer) {
    const m = answer && answer.mark && answer.mark.active ? answer.mark : null;
    return { items: new Set(m ? m.items : []), adjustment: m ? m.adjustment : 0,
             comment: m ? m.comment : "", reason: m ? m.reason : "" };
  }

  function rubric() { return (S.detail && S.detail.rubric) || S.part.rubric; }

  function isDone(a) {
    if (a.mark && a.mark.active) return !a.look;
    return a.auto !== null && a.auto.status !== "manual";
  }

  // --- loading ------------------------------------------------------------------------------

  async function start() {
    if (!TOKEN) {
      fatal("Open this page with the address attnkit mark printed (it carries the page's key).");
      return;
    }
    // The parts list (with every part's progress) and the part the URL names are asked for at
    // once: the part is shown as soon as it arrives, the picker is filled when the list does.
    S.names = localStorage.getItem("attnkit-names") === "1";
    $("names").checked = S.names;
    S.grader = localStorage.getItem("attnkit-grader") || "";
    const listed = api("GET", "/api/parts").then(({ status, data }) => {
      if (status !== 200) { fatal(data.error); return false; }
      S.parts = data.parts;
      S.grader = S.grader || data.grader;
      $("grader").value = S.grader;
      fillPicker();
      if (S.part) { $("part").value = `${S.part.problem}/${S.part.part}`; renderProgress(); }
      return true;
    });
    const want = readHash();
    if (want.problem && want.part && await openPart(want.problem, want.part, want, true)) return;
    if (!(await listed)) return;
    const first = S.parts.find((p) => p.kind === HAND && p.graded < p.answers) || S.parts[0];
    if (!first) return fatal("This assignment has no parts to mark.");
    await openPart(first.problem, first.part, null);
  }

  function fillPicker() {
    const select = $("part");
    select.replaceChildren();
    const groups = [["Graded by hand", (p) => p.kind === HAND],
                    ["Auto-graded: open for an override", (p) => p.kind !== HAND]];
    for (const [label, keep] of groups) {
      const box = document.createElement("optgroup");
      box.label = label;
      for (const p of S.parts.filter(keep)) {
        const option = make("option", `${p.problem} / ${p.part} (${points(p.points)}) · ${p.graded} of ${p.answers}`);
        option.value = `${p.problem}/${p.part}`;
        box.append(option);
      }
      if (box.children.length) select.append(box);
    }
  }

  async function openPart(problem, part, where, quiet) {
    // quiet: a part named by an old URL that is not there is no error (the caller picks another).
    document.body.dataset.state = "loading";
    const q = `problem=${encodeURIComponent(problem)}&part=${encodeURIComponent(part)}`;
    const { status, data } = await api("GET", "/api/part?" + q);
    if (status !== 200) { if (!quiet) fatal(data.error); return false; }
    S.part = data;
    S.answers = data.answers;
    S.byStudent = new Map(S.answers.map((a) => [a.student, a]));
    S.groups = data.groups;
    S.mode = where && where.mode === "groups" && S.groups.length ? "groups" : "answers";
    const n = where ? where.n : 0;
    S.index = clamp(S.mode === "answers" ? n : 0, 0, Math.max(S.answers.length - 1, 0));
    S.gindex = clamp(S.mode === "groups" ? n : 0, 0, Math.max(S.groups.length - 1, 0));
    $("part").value = `${problem}/${part}`;
    text($("title"), data.title);
    $("reason-field").hidden = data.kind === HAND;
    $("mode-groups").disabled = !S.groups.length;
    text($("mode-groups"), `Groups (${S.groups.length})`);
    renderProgress();
    renderReuse();
    $("main").hidden = !S.answers.length;
    $("empty").hidden = !!S.answers.length;
    if (!S.answers.length) { document.body.dataset.state = "shown"; return true; }
    await show();
    return true;
  }

  async function show() {
    const t = current();
    const shown = ++S.shown;
    document.body.dataset.state = "loading";
    S.detail = null;
    S.dirty = false;
    hideConflict();
    S.view = viewOf(t.members[0]);
    for (const a of t.members) S.basis.set(a.student, a.version);
    writeHash();
    renderModes();
    renderAnswer(t);
    renderEditor(t);
    setStatus(savedLine(t.members[0]));
    const first = t.members[0];
    const q = `problem=${encodeURIComponent(S.part.problem)}&part=${encodeURIComponent(S.part.part)}` +
              `&student=${encodeURIComponent(first.student)}`;
    const { status, data } = await api("GET", "/api/answer?" + q);
    if (shown !== S.shown) return;                       // the grader moved on meanwhile
    if (status !== 200) { setStatus(data.error, true); return; }
    S.detail = data;
    if (data.answer.version !== first.version                // someone saved it since the queue was read,
        || data.answer.answer_digest !== first.answer_digest) {   // or a later handin counts now
      absorb([data.answer], false);
      if (!S.dirty) { S.view = viewOf(data.answer); S.basis.set(first.student, data.answer.version); }
    }
    renderDetail(data);
    renderAnswer(current());
    renderEditor(current());
    setStatus(savedLine(current().members[0]));
    document.body.dataset.student = first.student;
    document.body.dataset.state = "shown";
  }

  // --- drawing ------------------------------------------------------------------------------

  function renderModes() {
    $("mode-answers").setAttribute("aria-pressed", String(S.mode === "answers"));
    $("mode-groups").setAttribute("aria-pressed", String(S.mode === "groups"));
    $("clear").hidden = S.mode === "groups";
  }

  function renderProgress() {
    const n = S.answers.length;
    const looks = S.answers.filter((a) => a.look).length;
    let line;
    if (S.part.kind === HAND) line = `${S.answers.filter(isDone).length} of ${n} graded`;
    else line = `${S.answers.filter((a) => a.marked).length} of ${n} overridden (auto-graded)`;
    text($("progress"), line + (looks ? ` · ${looks} need another look` : ""));
    const summary = S.parts.find((p) => p.problem === S.part.problem && p.part === S.part.part);
    if (summary) {
      summary.graded = S.part.kind === HAND ? S.answers.filter(isDone).length : S.answers.filter((a) => a.marked).length;
      const option = [...$("part").options].find((o) => o.value === `${summary.problem}/${summary.part}`);
      if (option) text(option, `${summary.problem} / ${summary.part} (${points(summary.points)}) · ${summary.graded} of ${summary.answers}`);
    }
  }

  function pseudonym(a) {
    const label = `Answer ${a.position} of ${S.answers.length}`;
    return S.names ? `${label} — ${a.name || "(no name)"} (${a.student})` : label;
  }

  function renderAnswer(t) {
    const first = t.members[0];
    if (t.group) {
      text($("who"), `Group ${S.gindex + 1} of ${S.groups.length}: ${t.group.label}`);
      const marks = new Set(t.members.map((a) => JSON.stringify(viewOf(a)) + (a.marked ? "1" : "0")));
      text($("group-note"), `One grade for all ${t.members.length}: saving applies it to every answer of the group` +
           (marks.size > 1 ? " (they are graded differently now; the first one's grade is shown)." : "."));
      $("group-note").hidden = false;
      const list = $("members");
      list.replaceChildren(...t.members.map((a) => make("li", pseudonym(a) + (a.marked ? " · graded" : ""))));
      list.hidden = false;
    } else {
      const g = S.groups.find((x) => x.key === first.group);
      text($("who"), pseudonym(first));
      text($("group-note"), g ? `One of ${g.label} (press g to grade the group at once)` : "");
      $("group-note").hidden = !g;
      $("members").hidden = true;
    }
    const auto = first.auto;
    $("auto").hidden = !auto || auto.status === "manual";
    if (auto) text($("auto"), `Automatic: ${auto.score} of ${auto.max_score} (${auto.status})` +
                    (auto.message ? ` — ${auto.message}` : ""));
    $("look").hidden = !first.look;
    text($("look"), first.look ? `Needs another look: ${first.look}` : "");
    text($("answer"), first.text);                       // the student's text, as text
  }

  function renderDetail(d) {
    trusted($("problem-prompt"), d.problem_prompt_html);
    trusted($("part-prompt"), d.part_prompt_html);
    const body = $("givens").tBodies[0];
    body.replaceChildren(...d.givens.map(([name, value]) => {
      const row = make("tr");
      row.append(make("th", name), make("td", value));
      return row;
    }));
    $("givens").hidden = !d.givens.length;
    trusted($("guide"), d.rubric.guide_html);
    $("guide-box").hidden = !d.rubric.guide_html;
    $("history").replaceChildren(...d.history.map((h) => make("li",
      `v${h.version} ${h.event} by ${h.grader}, ${h.at}: ${points(h.score)}` +
      (h.items.length ? ` [${h.items.join(", ")}]` : "") + (h.adjustment ? ` adjustment ${pts(h.adjustment)}` : "") +
      (h.comment ? ` — “${h.comment}”` : "") + (h.note ? ` (${h.note})` : ""))));
  }

  function renderEditor(t) {
    const r = rubric();
    const items = r ? r.items : [];
    const list = $("rubric");
    list.replaceChildren(...items.map((item, i) => {
      const li = make("li");
      const button = make("button", undefined, "item" + (S.view.items.has(item.id) ? " on" : ""));
      button.type = "button";
      button.dataset.index = String(i);
      button.setAttribute("aria-pressed", String(S.view.items.has(item.id)));
      const head = make("span", undefined, "head");
      head.append(make("kbd", i < 9 ? String(i + 1) : "·"), make("span", pts(item.points), "pts"),
                  make("code", item.id));
      const body = make("div", undefined, "text");
      trusted(body, item.text_html);
      button.append(head, body);
      if (item.note_html) { const note = make("div", undefined, "note"); trusted(note, item.note_html); button.append(note); }
      li.append(button);
      return li;
    }));
    $("no-items").hidden = !!items.length;
    // A field the grader is typing in is left alone: an earlier save answering meanwhile
    // must not put the old value back (the edit is saved when the field is left).
    if (document.activeElement !== $("adjustment")) $("adjustment").value = String(S.view.adjustment);
    if (r) { $("adjustment").min = String(r.floor - r.ceiling); $("adjustment").max = String(r.ceiling - r.floor); }
    if (document.activeElement !== $("comment")) $("comment").value = S.view.comment;
    if (document.activeElement !== $("reason")) $("reason").value = S.view.reason;
    $("clear").disabled = !(t.members[0].mark && t.members[0].mark.active);
    renderScore(t);
  }

  function renderScore(t) {
    const r = rubric();
    if (!r) return;
    const first = t.members[0];
    const base = S.part.kind === HAND ? r.start : (first.auto ? first.auto.score : 0);
    const sum = r.items.filter((i) => S.view.items.has(i.id)).reduce((s, i) => s + i.points, 0);
    const score = clamp(base + sum + Number(S.view.adjustment || 0), r.floor, r.ceiling);
    text($("score"), `Score ${+score.toFixed(4)} of ${S.part.points}`);
  }

  function savedLine(a) {
    if (!a.mark) return "Not graded yet.";
    const m = a.mark;
    return m.active ? `Saved: ${points(m.score)}, version ${m.version}, by ${m.grader} at ${m.marked_at}.`
                    : `Cleared by ${m.grader} at ${m.marked_at} (version ${m.version}).`;
  }

  function renderReuse() {
    const list = $("reuse-list");
    list.replaceChildren(...S.part.comments.map((c) => {
      const b = make("button", c.length > 60 ? c.slice(0, 57) + "…" : c, "reuse");
      b.type = "button";
      b.title = c;
      b.addEventListener("click", () => { $("comment").value = c; commitComment(); });
      return b;
    }));
    $("reuse").hidden = !S.part.comments.length;
  }

  // --- saving ---------------------------------------------------------------------------------

  function absorb(answers, ours) {
    for (const a of answers) {
      const old = S.byStudent.get(a.student);
      if (!old) continue;
      S.answers[S.answers.indexOf(old)] = a;
      S.byStudent.set(a.student, a);
      if (ours) S.basis.set(a.student, a.version);
    }
    renderProgress();
  }

  function pendingChanged(delta) {
    S.pending += delta;
    document.body.dataset.pending = String(S.pending);
  }

  function queueSave(t) {
    S.dirty = true;
    renderScore(t);
    if (S.part.kind !== HAND && !S.view.reason.trim()) {
      setStatus("An override needs a reason: type it in the reason field, and the grade is saved.", true);
      return;
    }
    const members = t.members.map((a) => a.student);
    const epochs = members.map((id) => S.epoch.get(id) || 0);
    const body = { problem: S.part.problem, part: S.part.part, items: [...S.view.items],
                   adjustment: Number(S.view.adjustment), comment: S.view.comment, reason: S.view.reason };
    pendingChanged(+1);
    setStatus("Saving…");
    S.chain = S.chain.then(() => sendSave(t, members, epochs, body))
      .catch((err) => setStatus("Not saved: " + err, true))
      .finally(() => pendingChanged(-1));
  }

  async function sendSave(t, members, epochs, body) {
    if (members.some((id, i) => (S.epoch.get(id) || 0) !== epochs[i])) return;   // waits for the grader's decision
    body.students = members.map((id) => ({ id, version: S.basis.get(id), answer: S.byStudent.get(id).answer_digest }));
    body.grader = S.grader;
    const { status, data } = await api("POST", "/api/mark", body);
    const shownHere = current() && current().key === t.key;
    if (status === 200) {
      absorb(data.answers, true);
      if (body.comment && !S.part.comments.includes(body.comment)) { S.part.comments.push(body.comment); renderReuse(); }
      if (shownHere) {
        const a = S.byStudent.get(members[0]);
        setStatus(savedLine(a) + (members.length > 1 ? ` (all ${members.length} answers of the group)` : ""));
        renderEditor(current());
        if (S.mode === "groups") renderAnswer(current());
      }
    } else if (status === 409) {
      for (const id of members) S.epoch.set(id, (S.epoch.get(id) || 0) + 1);
      absorb(data.answers, false);
      showConflict(t, body, data);
    } else {
      // Refused (an adjustment out of range, say): the page goes back to the grade that is
      // saved, so the score shown is never one the gradebook does not hold.
      if (shownHere && !S.conflict) {
        S.view = viewOf(S.byStudent.get(members[0]));
        S.dirty = false;
        renderEditor(current());
      }
      setStatus("Not saved: " + data.error + " " + savedLine(S.byStudent.get(members[0])), true);
    }
  }

  function showConflict(t, mine, data) {
    const theirs = data.answers[0];
    const m = theirs && theirs.mark;
    const who = m ? `${m.grader} (version ${m.version}, ${m.marked_at})` : "someone";
    if (data.changed) {
      text($("conflict-text"), `Not saved: the answer changed since you read it (${data.changed.join(", ")}: ` +
           "a later handin counts, or it was graded again). The answer that counts now is shown: read it and grade it.");
    } else {
      text($("conflict-text"), `Not saved: ${who} saved this grade since you opened it. ` +
           `Their grade is shown now${m && m.active ? `: ${points(m.score)}` + (m.items.length ? ` [${m.items.join(", ")}]` : "") +
           (m.comment ? `, “${m.comment}”` : "") : " (cleared)"}.`);
    }
    text($("conflict-mine"), `Yours: [${mine.items.join(", ")}]` + (mine.adjustment ? ` adjustment ${pts(mine.adjustment)}` : "") +
         (mine.comment ? `, “${mine.comment}”` : ""));
    $("conflict-mine-save").hidden = !!data.changed;     // a changed answer is read, then graded afresh
    S.conflict = { key: t.key, mine };
    if (current() && current().key === t.key) {
      S.view = viewOf(S.byStudent.get(t.members[0].student));
      for (const id of t.members.map((a) => a.student)) S.basis.set(id, S.byStudent.get(id).version);
      renderAnswer(current());
      renderEditor(current());
      setStatus(savedLine(S.byStudent.get(t.members[0].student)), true);
      $("conflict").hidden = false;
    }
  }

  function hideConflict() { $("conflict").hidden = true; S.conflict = null; }

  function saveMineOverTheirs() {
    const c = S.conflict;
    const t = current();
    if (!c || !t || t.key !== c.key) return hideConflict();
    S.view = { items: new Set(c.mine.items), adjustment: c.mine.adjustment, comment: c.mine.comment, reason: c.mine.reason };
    hideConflict();
    renderEditor(t);
    queueSave(t);
  }

  async function clearGrade() {
    const t = current();
    if (!t || t.group) return;
    const a = t.members[0];
    await S.chain;
    const body = { problem: S.part.problem, part: S.part.part, grader: S.grader,
                   students: [{ id: a.student, version: S.basis.get(a.student), answer: a.answer_digest }] };
    const { status, data } = await api("POST", "/api/clear", body);
    if (status === 200) { absorb(data.answers, true); S.view = viewOf(S.byStudent.get(a.student)); renderEditor(current()); setStatus(savedLine(S.byStudent.get(a.student))); }
    else if (status === 409) { absorb(data.answers, false); showConflict(t, { items: [], adjustment: 0, comment: "" }, data); }
    else setStatus("Not cleared: " + data.error, true);
  }

  // --- what the grader does ---------------------------------------------------------------------

  function toggle(i) {
    const r = rubric();
    const t = current();
    if (!r || !t || i >= r.items.length) return;
    const id = r.items[i].id;
    if (S.view.items.has(id)) S.view.items.delete(id); else S.view.items.add(id);
    renderEditor(t);
    queueSave(t);
  }

  function commitComment() {
    const t = current();
    if (!t || $("comment").value === S.view.comment) return;
    S.view.comment = $("comment").value;
    queueSave(t);
  }

  function commitAdjustment() {
    const t = current();
    const value = Number($("adjustment").value);
    if (!t || !Number.isFinite(value)) { setStatus("The adjustment must be a number.", true); return; }
    if (value === Number(S.view.adjustment)) return;
    S.view.adjustment = value;
    queueSave(t);
  }

  function commitReason() {
    const t = current();
    if (!t || $("reason").value === S.view.reason) return;
    S.view.reason = $("reason").value;
    queueSave(t);
  }

  function move(step) {
    if (S.mode === "groups") {
      if (!S.groups.length) return;
      S.gindex = clamp(S.gindex + step, 0, S.groups.length - 1);
    } else {
      if (!S.answers.length) return;
      S.index = clamp(S.index + step, 0, S.answers.length - 1);
    }
    show();
  }

  function nextUngraded() {
    const list = S.mode === "groups" ? S.groups : S.answers;
    const at = S.mode === "groups" ? S.gindex : S.index;
    const open = (x) => S.mode === "groups" ? x.members.some((id) => !isDone(S.byStudent.get(id))) : !isDone(x);
    for (let k = 1; k <= list.length; k++) {
      const j = (at + k) % list.length;
      if (open(list[j])) {
        if (S.mode === "groups") S.gindex = j; else S.index = j;
        return show();
      }
    }
    setStatus(S.mode === "groups" ? "Every group is graded." : "Every answer of this part is graded.");
  }

  function setMode(mode) {
    if (mode === S.mode || (mode === "groups" && !S.groups.length)) return;
    const a = current().members[0];
    S.mode = mode;
    if (mode === "groups") S.gindex = Math.max(S.groups.findIndex((g) => g.members.includes(a.student)), 0);
    else S.index = Math.max(S.answers.indexOf(a), 0);
    show();
  }

  function onKey(e) {
    const field = e.target.closest && e.target.closest("input, textarea, select");
    if (field) {
      if (e.key === "Escape") field.blur();
      else if (field.id === "comment" && e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); commitComment(); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || !S.part || !S.answers.length) return;
    const actions = { ArrowRight: () => move(1), j: () => move(1), ArrowLeft: () => move(-1), k: () => move(-1),
                      n: nextUngraded, g: () => setMode(S.mode === "groups" ? "answers" : "groups"),
                      c: () => $("comment").focus() };
    if (/^[1-9]$/.test(e.key)) { e.preventDefault(); toggle(Number(e.key) - 1); }
    else if (actions[e.key]) { e.preventDefault(); actions[e.key](); }
  }

  function wire() {
    document.addEventListener("keydown", onKey);
    $("part").addEventListener("change", () => {
      const [problem, part] = $("part").value.split("/");
      $("part").blur();
      openPart(problem, part, null);
    });
    $("rubric").addEventListener("click", (e) => {
      const button = e.target.closest("button.item");
      if (button) toggle(Number(button.dataset.index));
    });
    $("comment").addEventListener("blur", commitComment);
    $("adjustment").addEventListener("change", commitAdjustment);
    $("reason").addEventListener("change", commitReason);
    $("names").addEventListener("change", () => {
      $("names").blur();                       // the shortcut keys work again at once
      S.names = $("names").checked;
      localStorage.setItem("attnkit-names", S.names ? "1" : "0");
      if (current()) renderAnswer(current());
    });
    $("grader").addEventListener("change", () => {
      $("grader").blur();
      S.grader = $("grader").value.trim() || S.grader;
      $("grader").value = S.grader;
      localStorage.setItem("attnkit-grader", S.grader);
    });
    $("mode-answers").addEventListener("click", () => setMode("answers"));
    $("mode-groups").addEventListener("click", () => setMode("groups"));
    $("conflict-keep").addEventListener("click", hideConflict);
    $("conflict-mine-save").addEventListener("click", saveMineOverTheirs);
    $("clear").addEventListener("click", clearGrade);
    // A hash typed or pasted into the address bar (or a bookmark) opens what it names; the
    // page's own moves rewrite the hash with replaceState, which fires no event.
    window.addEventListener("hashchange", () => {
      const want = readHash();
      if (!want.problem || !want.part) return;
      const at = S.mode === "groups" ? S.gindex : S.index;
      const here = S.part && S.part.problem === want.problem && S.part.part === want.part
                   && (want.mode || "answers") === S.mode && want.n === at;
      if (!here) openPart(want.problem, want.part, want, false);
    });
    document.body.dataset.pending = "0";
  }

  wire();
  start();
})();
