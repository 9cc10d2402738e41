// Live planning session: renders streamed agent replies, resumes by seq after reconnects,
// and sends the human's messages and decisions. While a reply streams its markdown is drawn
// by a small renderer that builds DOM nodes and sets only textContent (model text is never
// parsed as HTML); the final HTML comes from the server, already sanitized.
(function () {
  "use strict";
  const root = document.getElementById("session");
  if (!root) return;
  const sessionId = root.dataset.sessionId;
  const list = document.getElementById("messages");
  const $ = (id) => document.getElementById(id);
  const texts = new Map(); // seq -> text received so far for streaming messages
  const progress = new Map(); // seq -> {phase, prompt_tokens, estimate, startedAt, node, agent}
  const discarded = new Map(); // seq -> [{reason, text}] attempts redone while the page watched
  const redoReason = new Map(); // seq -> why the next restart of its text happens
  const opened = new Set(); // seqs of superseded messages the reader opened
  const openedCode = new Set(); // seqs of evidence cards whose code the reader opened
  let socket = null;
  let retryDelay = 500;
  // Logout closes the socket with 4401: it will never reconnect, so nothing says "retrying".
  let signedOut = false;
  const SIGNED_OUT = "Signed out — log in again";
  let state = JSON.parse($("initial-state").textContent);
  // A replay sends only the latest messages; older ones after this seq are still being paged
  // in with "history" frames (null: none missing).
  let missingAfter = null;
  // Earlier rounds of these steps are superseded by the latest one: shown collapsed.
  const SUPERSEDABLE = ["propose_changes", "review_and_refine", "verify_review", "validate_proposal"];

  function resumePoint() {
    // Everything up to the first message still streaming, and up to the first one still
    // missing, is complete on screen.
    let point = 0;
    for (const node of list.querySelectorAll("article.msg")) {
      const seq = Number(node.dataset.seq);
      if (node.classList.contains("state-streaming")) { point = seq - 1; break; }
      point = Math.max(point, seq);
    }
    return missingAfter === null ? point : Math.min(point, missingAfter);
  }

  function onGap(ev) {
    // Messages between after_seq and before_seq were left out of a replay: ask for them, a
    // page at a time (each page ends with history.end, and with another gap if need be).
    missingAfter = missingAfter === null ? ev.after_seq : Math.min(missingAfter, ev.after_seq);
    send({ type: "history", after_seq: ev.after_seq, before_seq: ev.before_seq });
  }

  function onHistoryEnd(ev) {
    if (!ev.more && missingAfter === ev.after_seq) missingAfter = null;
  }

  // "The bottom" is the end of the conversation and its controls, not of the page: on a phone
  // the sidebar stacks below them, and scrolling to the page's end jumped to it.
  function conversationEnd() {
    return $("controls").getBoundingClientRect().bottom + window.scrollY;
  }
  function nearBottom() {
    return window.innerHeight + window.scrollY >= conversationEnd() - 160;
  }
  function keepScrolled(wasNear) {
    if (wasNear) window.scrollTo(0, Math.max(0, conversationEnd() - window.innerHeight));
  }

  function who(m) {
    if (m.role === "agent") return "Agent " + m.agent;
    if (m.role === "user") return "You";
    if (m.kind === "evidence") return "Evidence";
    return "System";
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // ------------------------------------------------------------ markdown while streaming

  // Inline code, bold, italics. Every piece becomes a text node or an element whose
  // textContent is set: nothing the model writes is ever parsed as HTML.
  const INLINE = /(`+)([^`]+?)\1|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])/g;
  function inline(parent, text) {
    let last = 0;
    INLINE.lastIndex = 0;
    for (let m = INLINE.exec(text); m; m = INLINE.exec(text)) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      if (m[2] !== undefined) parent.appendChild(el("code", "", m[2]));
      else if (m[3] !== undefined || m[4] !== undefined) parent.appendChild(el("strong", "", m[3] || m[4]));
      else parent.appendChild(el("em", "", m[5] || m[6]));
      last = INLINE.lastIndex;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  function renderMarkdown(target, text) {
    const out = document.createDocumentFragment();
    const lines = text.split("\n");
    let para = null;
    let listNode = null;
    let i = 0;
    const endBlocks = () => { para = null; listNode = null; };
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(/^\s*(```|~~~)/);
      if (fence) {
        endBlocks();
        const code = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) code.push(lines[i++]);
        i++; // the closing fence (or the end of what has streamed so far)
        const pre = el("pre");
        pre.appendChild(el("code", "", code.join("\n")));
        out.appendChild(pre);
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      const item = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
      if (!line.trim()) {
        endBlocks();
      } else if (heading) {
        endBlocks();
        const h = el("h" + Math.min(6, heading[1].length + 1));
        inline(h, heading[2]);
        out.appendChild(h);
      } else if (item) {
        para = null;
        const ordered = /\d/.test(item[1]);
        if (!listNode || (listNode.tagName === "OL") !== ordered) {
          listNode = el(ordered ? "ol" : "ul");
          out.appendChild(listNode);
        }
        const li = el("li");
        inline(li, item[2]);
        listNode.appendChild(li);
      } else if (listNode && /^\s{2,}\S/.test(line)) {
        inline(listNode.lastChild, " " + line.trim()); // a list item's continuation
      } else {
        listNode = null;
        if (!para) { para = el("p"); out.appendChild(para); } else para.appendChild(el("br"));
        inline(para, line);
      }
      i++;
    }
    target.replaceChildren(out);
  }

  const pendingDraw = new Set();
  function drawSoon(seq) {
    // Deltas come about every 75 ms; draw at most once a frame.
    if (pendingDraw.size === 0) requestAnimationFrame(drawPending);
    pendingDraw.add(seq);
  }
  function drawPending() {
    const wasNear = nearBottom();
    for (const seq of pendingDraw) {
      const node = document.getElementById("m" + seq);
      if (node && texts.has(seq)) renderMarkdown(node.querySelector(":scope > .body"), texts.get(seq));
    }
    pendingDraw.clear();
    keepScrolled(wasNear);
  }

  // ------------------------------------------------------------ progress of a turn

  function clock(seconds) {
    const s = Math.max(0, Math.round(seconds));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function queueText(p) {
    // Waiting its turn in the machine's one line for the local model (agents.model_queue):
    // how many calls are ahead and, from their estimates at this machine's speed, how long.
    const q = p.queue || {};
    const waited = clock((Date.now() - p.queuedAt) / 1000);
    let text = "in line for the model: " + q.ahead + " call" + (q.ahead === 1 ? "" : "s") + " ahead of this one";
    if (q.generating) text += " (" + q.generating + " generating)";
    if (q.wait_s === null || q.wait_s === undefined) text += " · waited " + waited + " · no time estimate: a call ahead has no measured speed yet";
    else text += " · waited " + waited + " · about " + minutes(q.wait_s) + " more at this machine's current speed";
    return text;
  }

  function progressText(p) {
    if (p.phase === "queued") return queueText(p);
    const elapsed = (Date.now() - p.startedAt) / 1000;
    let text;
    if (p.phase === "writing") text = "writing";
    else if (p.phase === "redo") text = "redoing the reply";
    else if (p.prompt_tokens) text = "reading the prompt (≈" + p.prompt_tokens.toLocaleString() + " tokens)";
    else text = "reading the prompt";
    // The local model's first call in its process loads the weights before it reads anything.
    if (p.loading_model && p.phase === "reading") text = "loading the model, then " + text;
    text += " · " + clock(elapsed);
    const e = p.estimate;
    if (e && e.basis === "speed") {
      // This prompt read, and a reply as long as past ones written, at the speed the trace
      // measured on this machine lately.
      text += elapsed <= e.seconds
        ? " of about " + minutes(e.seconds) + " at this machine's current speed"
        : " (about " + minutes(e.seconds) + " was expected at this machine's recent speed)";
      text += " · reads ≈" + Math.round(e.read_per_s) + ", writes ≈" + Math.round(e.write_per_s) + " tokens/s";
    } else if (e) {
      const runs = e.runs;
      text += elapsed <= e.seconds
        ? " of about " + clock(e.seconds)
        : " (past turns took about " + clock(e.seconds) + ")";
      text += " · median of " + runs + " past turn" + (runs === 1 ? "" : "s");
    } else {
      text += " · no speed measured yet for this model on this machine";
    }
    if (p.stopping || stopping) text = stoppingText(p.stopping || stopping) + " — " + text;
    return text;
  }

  function minutes(seconds) {
    if (seconds < 90) return Math.max(1, Math.round(seconds)) + " s";
    return Math.round(seconds / 60) + " min";
  }

  // Stop or Stop reply acknowledged by the server ("stopping" event): said until the state
  // shows the agents stopped.
  let stopping = "";
  // A call outside any message (an evidence plan, a check, a signal): said on the status line.
  let outside = null;
  function stoppingText(what) {
    return what === "session" ? "stopping the session (a summary follows)" : "stopping the reply";
  }

  function setProgress(seq, update) {
    const had = progress.get(seq) || {};
    const next = Object.assign({}, had, update);
    if (update.elapsed_s !== undefined) next.startedAt = Date.now() - update.elapsed_s * 1000;
    if (had.prompt_tokens && !update.prompt_tokens) next.prompt_tokens = had.prompt_tokens;
    // A replayed "reading" never takes a turn back from "writing" once text has arrived.
    if (had.phase === "writing" && update.phase === "reading") next.phase = "writing";
    if (update.phase === "queued") next.queuedAt = had.phase === "queued" && had.queuedAt ? had.queuedAt : Date.now();
    progress.set(seq, next);
    paintProgress();
  }

  function paintProgress() {
    for (const [seq, p] of progress) {
      const node = document.getElementById("m" + seq);
      if (!node || !node.classList.contains("state-streaming")) { progress.delete(seq); continue; }
      const label = node.querySelector(".typing");
      if (label) label.textContent = progressText(p);
    }
    paintStatusLine();
  }
  setInterval(paintProgress, 1000);

  function currentStep() {
    const wf = state.workflow;
    if (!wf || !wf.step) return null;
    return wf.steps[wf.step - 1];
  }

  function paintStatusLine() {
    // "Step 3 of 10 · Propose changes — Agent A: writing · 0:42 of about 1:50"
    const wf = state.workflow;
    const step = currentStep();
    let where = "";
    if (wf && step) where = "Step " + wf.step + " of " + wf.steps.length + " · " + step.label;
    else if (state.node && state.mode === "planning" && state.node !== "stopped" && !(wf && wf.answered)) where = state.node.replace(/_/g, " ");
    let what = "";
    const streaming = Array.from(progress.entries()).pop();
    if (state.status === "running") {
      if (streaming) {
        const [seq, p] = streaming;
        const node = document.getElementById("m" + seq);
        const writer = node ? node.querySelector(".who").textContent : "";
        what = (writer ? writer + ": " : "") + progressText(p);
      } else {
        what = stopping ? stoppingText(stopping)
          : outside && outside.phase === "queued" ? progressText(outside)
          : outside ? "waiting for the model: " + progressText(outside)
          : "waiting for the model";
      }
    }
    $("running-label").textContent = [where, what].filter(Boolean).join(" — ") || "Agents are working…";
    $("where").textContent = whereText();
  }

  function whereText() {
    // Every count is of the sidebar's rows (wf.steps), so "Step k of n" and the panel agree.
    const wf = state.workflow;
    if (!wf) return "";
    const total = wf.steps.length;
    const stopped = wf.steps.find((s) => s.status === "stopped");
    if (state.status === "stopped") {
      return stopped ? "Stopped during step " + (wf.steps.indexOf(stopped) + 1) + " of " + total + ": " + stopped.label
        : "Stopped before the first step finished";
    }
    if (state.node === "completed") return "All " + total + " steps done";
    const step = currentStep();
    if (!step) return "";
    const paused = step.status === "paused" ? " (paused)" : "";
    return "Step " + wf.step + " of " + total + ": " + step.label + paused;
  }

  // ------------------------------------------------------------ messages

  function header(m) {
    const h = el("header");
    h.appendChild(el("span", "who", who(m)));
    if (m.node) h.appendChild(el("span", "node", m.node));
    if (m.signal) h.appendChild(el("span", "signal", m.signal));
    if (m.state === "interrupted") h.appendChild(el("span", "badge failed", "interrupted"));
    if (m.state === "streaming") h.appendChild(el("span", "typing", "reading the prompt"));
    let meta = m.model ? m.model + " · " + m.prompt_tokens + "→" + m.completion_tokens + " tok" : "";
    if (m.model && m.latency_ms) meta += " · " + m.latency_ms + " ms";
    if (m.model && m.cost_usd !== null && m.cost_usd !== undefined) meta += " · $" + m.cost_usd.toFixed(4);
    h.appendChild(el("span", "meta", meta));
    return h;
  }

  function citations(m) {
    if (!m.citations || !m.citations.length) return null;
    const f = el("footer", "cites");
    const codebaseUrl = document.querySelector(".session-head a[href^='/codebases/']").getAttribute("href");
    for (const c of m.citations) {
      const a = el("a", "cite" + (c.exists ? "" : " missing") + (c.context ? " context" : ""), c.path + ":" + c.start + "-" + c.end);
      a.href = codebaseUrl + "file/" + encodeURI(c.path) + "?hl=" + c.start + "-" + c.end + "#L" + c.start;
      f.appendChild(a);
    }
    return f;
  }

  function heardLine(seqs) {
    if (!seqs || !seqs.length) return null;
    const p = el("p", "heard");
    p.dataset.heard = seqs.join(",");
    return p;
  }

  function fillHeard(p) {
    // "Read your notes: “Keep the counters in Redis…” (#7)": the notes this turn was given.
    const seqs = p.dataset.heard.split(",").filter(Boolean);
    p.replaceChildren(document.createTextNode(seqs.length === 1 ? "Read your note " : "Read your notes "));
    seqs.forEach((seq, i) => {
      const note = document.getElementById("m" + seq);
      let quote = note ? note.querySelector(":scope > .body").textContent.trim() : "";
      if (quote.length > 90) quote = quote.slice(0, 87) + "…";
      const a = el("a", "", quote ? "“" + quote + "”" : "#" + seq);
      a.href = "#m" + seq;
      a.title = "message #" + seq;
      if (i) p.appendChild(document.createTextNode(", "));
      p.appendChild(a);
    });
  }

  function discardedBox(items) {
    if (!items || !items.length) return null;
    const box = el("div", "discarded");
    for (const item of items) {
      const d = el("details");
      d.appendChild(el("summary", "", "Earlier attempt discarded and redone: " + item.reason));
      d.appendChild(el("div", "attempt", item.text));
      box.appendChild(d);
    }
    return box;
  }

  function upsert(m) {
    const node = document.getElementById("m" + m.seq);
    const fresh = el("article", "msg role-" + m.role + (m.agent ? " agent-" + m.agent : "") + " state-" + m.state +
      (m.kind === "evidence" ? " evidence" : ""));
    fresh.id = "m" + m.seq;
    fresh.dataset.seq = m.seq;
    fresh.dataset.node = m.node || "";
    fresh.dataset.cost = m.cost_usd === null || m.cost_usd === undefined ? "" : m.cost_usd;
    fresh.appendChild(header(m));
    const shownDiscarded = m.discarded && m.discarded.length ? m.discarded : discarded.get(m.seq);
    const box = discardedBox(shownDiscarded);
    if (box) fresh.appendChild(box);
    const body = el("div", "body md");
    if (m.html !== undefined && m.state !== "streaming") {
      body.innerHTML = m.html; // sanitized server-side with nh3
    } else {
      renderMarkdown(body, m.content || "");
    }
    fresh.appendChild(body);
    if (m.kind === "evidence") foldEvidence(fresh);
    const heard = heardLine(m.heard);
    if (heard) { fresh.appendChild(heard); fillHeard(heard); }
    const cites = citations(m);
    if (cites) fresh.appendChild(cites);
    if (node) {
      node.replaceWith(fresh);
    } else {
      // Keep seq order even if events arrive out of order.
      const after = Array.from(list.children).find((c) => Number(c.dataset.seq) > m.seq);
      list.insertBefore(fresh, after || null);
    }
    collapseSuperseded();
    return fresh;
  }

  function collapseSuperseded() {
    // The latest proposal (review, check, validation) stays open; earlier ones fold to their
    // header, one click away.
    const latest = new Map();
    const articles = Array.from(list.querySelectorAll("article.msg"));
    for (const a of articles) if (SUPERSEDABLE.includes(a.dataset.node)) latest.set(a.dataset.node, a);
    for (const a of articles) {
      const older = SUPERSEDABLE.includes(a.dataset.node) && latest.get(a.dataset.node) !== a &&
        !a.classList.contains("state-streaming");
      a.classList.toggle("superseded", older);
      a.classList.toggle("collapsed", older && !opened.has(a.dataset.seq));
      let toggle = a.querySelector("header .fold");
      if (older && !toggle) {
        toggle = el("button", "fold");
        toggle.type = "button";
        toggle.dataset.fold = a.dataset.seq;
        a.querySelector("header").insertBefore(toggle, a.querySelector("header .meta"));
      }
      if (toggle && !older) toggle.remove();
      if (toggle) toggle.textContent = a.classList.contains("collapsed") ? "superseded · show" : "superseded · hide";
    }
  }

  // ------------------------------------------------------------ evidence cards

  function foldEvidence(article) {
    // An investigation's result [E#] (agents/investigation/evidence.py: the head line, the
    // tool's message, then its code): the code folds under a <details>, closed until the reader
    // opens it, and open again after a re-render if they had. Only the server's sanitized nodes
    // are moved; nothing is parsed. A result with no code (nothing found) has nothing to fold.
    const body = article.querySelector(":scope > .body");
    if (!body || article.classList.contains("state-streaming") || body.querySelector(":scope > details.evidence-code")) return;
    const first = body.querySelector(":scope > pre");
    article.classList.toggle("evidence-empty", !first);
    if (!first) return;
    const code = [];
    for (let n = first; n; n = n.nextSibling) code.push(n);
    const lines = code.filter((n) => n.tagName === "PRE")
      .reduce((sum, pre) => sum + pre.textContent.replace(/\n$/, "").split("\n").length, 0);
    const details = el("details", "evidence-code");
    details.dataset.seq = article.dataset.seq;
    details.appendChild(el("summary", "", "Code · " + lines + " line" + (lines === 1 ? "" : "s")));
    details.append(...code);
    details.open = openedCode.has(article.dataset.seq);
    body.appendChild(details);
  }

  // "toggle" does not bubble: listen while it goes down. The reader's choice is kept by seq and
  // put on the card drawn now, should the one they clicked have been replaced meanwhile.
  document.addEventListener("toggle", (e) => {
    const details = e.target;
    if (!(details instanceof HTMLDetailsElement) || !details.classList.contains("evidence-code")) return;
    const seq = details.dataset.seq;
    if (details.open) openedCode.add(seq); else openedCode.delete(seq);
    const shown = document.querySelector("#m" + seq + " details.evidence-code");
    if (shown && shown.open !== details.open) shown.open = details.open;
  }, true);

  function onStart(m, replay) {
    const have = texts.get(m.seq);
    let content = m.content || "";
    if (replay && have && have.startsWith(content)) {
      // A replay read from the database before deltas the page already has: keep the text.
      content = have;
      m = Object.assign({}, m, { content: have });
    } else if (have && !content.startsWith(have)) {
      // The turn started its text again (a redo, a repair): keep what was shown, say why.
      const items = discarded.get(m.seq) || [];
      items.push({ reason: redoReason.get(m.seq) || "the reply was restarted", text: have });
      discarded.set(m.seq, items);
      redoReason.delete(m.seq);
    }
    texts.set(m.seq, content);
    upsert(m);
    if (m.state === "streaming" && !progress.has(m.seq)) setProgress(m.seq, { phase: content ? "writing" : "reading", elapsed_s: 0 });
    else if (m.state === "streaming" && content) setProgress(m.seq, { phase: "writing" });
  }

  function onDelta(ev) {
    const node = document.getElementById("m" + ev.seq);
    const have = texts.get(ev.seq);
    if (!node || have === undefined) {
      // A live delta can overtake the replay we asked for; the replay will carry its text.
      return replaying ? undefined : requestResume(ev.seq - 1);
    }
    if (ev.offset > have.length) return requestResume(ev.seq - 1); // a gap: replay from the db
    const end = ev.offset + ev.text.length;
    if (end <= have.length) return; // already have it (replay overlap)
    const next = have + ev.text.slice(have.length - ev.offset);
    texts.set(ev.seq, next);
    if (progress.has(ev.seq) && progress.get(ev.seq).phase !== "writing") setProgress(ev.seq, { phase: "writing" });
    drawSoon(ev.seq);
  }

  function onProgress(ev) {
    if (ev.seq === null || ev.seq === undefined) {
      if (ev.phase === "done") outside = null;
      else if (ev.phase === "queued") outside = Object.assign({}, ev, { queuedAt: (outside && outside.phase === "queued" && outside.queuedAt) || Date.now() });
      else if (ev.phase === "reading") outside = Object.assign({}, ev, { startedAt: Date.now() - (ev.elapsed_s || 0) * 1000 });
      else if (outside) outside.phase = ev.phase; // its first piece came: writing, same clock
      paintStatusLine();
      return;
    }
    if (ev.phase === "redo") redoReason.set(ev.seq, ev.reason);
    setProgress(ev.seq, ev);
  }

  function onEnd(m, truncated) {
    if (truncated) return requestResume(m.seq - 1); // too big for the channel layer: read the db
    const have = texts.get(m.seq);
    if (have && redoReason.has(m.seq) && !(m.discarded && m.discarded.length) && !(m.content || "").startsWith(have)) {
      // Redone and finished before a redraw reached the page: keep what was shown, say why.
      discarded.set(m.seq, (discarded.get(m.seq) || []).concat([{ reason: redoReason.get(m.seq), text: have }]));
    }
    redoReason.delete(m.seq);
    texts.delete(m.seq);
    progress.delete(m.seq);
    upsert(m);
    updateCost();
    paintStatusLine();
  }

  function updateCost() {
    let cost = 0;
    let priced = false;
    for (const node of list.querySelectorAll("article.msg")) {
      if (node.dataset.cost) { cost += Number(node.dataset.cost); priced = true; }
    }
    $("cost").textContent = priced ? "About $" + cost.toFixed(4) + " at the profiles' list prices" : "";
  }

  function updateUsage(u) {
    // One source for both figures: the session's own counters, charged at every call.
    if (!u) return;
    $("meter").textContent = u.calls.toLocaleString() + " LLM call" + (u.calls === 1 ? "" : "s") + " · " +
      u.tokens.toLocaleString() + " tokens";
    const limits = [];
    if (u.call_budget) limits.push(u.calls.toLocaleString() + " of " + u.call_budget.toLocaleString() + " calls");
    if (u.token_budget) limits.push(u.tokens.toLocaleString() + " of " + u.token_budget.toLocaleString() + " tokens");
    $("budget").textContent = limits.length ? "Budget: " + limits.join(" · ") : "No budget limit";
  }

  // ------------------------------------------------------------ the trace panel

  // The count follows the calls as they are charged (the state's usage, like the meter); the
  // list is the server's, drawn again from the session page when the panel opens (or is open)
  // and holds fewer calls than the count. A call is listed once it has finished, so while one
  // runs the note says so.
  const tracePanel = $("trace") ? $("trace").querySelector(":scope > details") : null;
  const traceView = { calls: 0, listed: 0, loading: false, again: false };
  if (tracePanel) {
    traceView.calls = traceView.listed = Number($("trace-count").dataset.listed) || 0;
    tracePanel.addEventListener("toggle", () => { if (tracePanel.open) loadTrace(); });
  }

  function paintTrace() {
    if (!tracePanel) return;
    const n = traceView.calls;
    $("trace-count").textContent = n.toLocaleString() + " LLM call" + (n === 1 ? "" : "s");
    const unlisted = n - traceView.listed;
    let note = "";
    if (traceView.loading) note = "— loading the latest calls…";
    else if (unlisted > 0 && !tracePanel.open) note = "— open to see the latest";
    else if (unlisted > 0 && state.status === "running") note = "— " + unlisted + " still running";
    $("trace-note").textContent = note;
  }

  function updateTrace(usage) {
    if (!tracePanel || !usage) return;
    traceView.calls = usage.calls;
    paintTrace();
    if (tracePanel.open) loadTrace();
  }

  function loadTrace() {
    if (traceView.listed >= traceView.calls) return;
    if (traceView.loading) { traceView.again = true; return; }
    traceView.loading = true;
    paintTrace();
    fetch(location.pathname, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        // DOMParser builds an inert document: nothing in it runs. The list is the server's
        // template, every prompt and output auto-escaped.
        const page = new DOMParser().parseFromString(html, "text/html");
        const list = page.getElementById("trace-list");
        const count = page.getElementById("trace-count");
        if (!list || !count) return;
        const open = new Set(Array.from($("trace-list").querySelectorAll("details[open]")).map((d) => d.id));
        $("trace-list").replaceChildren(...Array.from(list.childNodes).map((n) => document.adoptNode(n)));
        for (const id of open) { const d = document.getElementById(id); if (d) d.open = true; }
        $("trace-shown").textContent = page.getElementById("trace-shown").textContent;
        traceView.listed = Number(count.dataset.listed) || 0;
      })
      .catch(() => {})
      .finally(() => {
        traceView.loading = false;
        paintTrace();
        // A call charged while this one loaded: once more, a moment later.
        if (traceView.again) { traceView.again = false; setTimeout(loadTrace, 1000); }
      });
  }

  function renderWorkflow(wf) {
    const ol = $("workflow");
    if (!ol || !wf) return;
    const words = { done: "✓", current: "now", paused: "paused", stopped: "stopped here", pending: "" };
    ol.replaceChildren();
    for (const s of wf.steps) {
      const li = el("li", s.status);
      li.dataset.node = s.node;
      li.dataset.status = s.status;
      li.appendChild(document.createTextNode(s.label + " "));
      if (s.who) li.appendChild(el("small", "", s.who));
      if (words[s.status]) li.appendChild(el("span", "step-status", words[s.status]));
      ol.appendChild(li);
    }
    ol.dataset.node = state.node;
  }

  function endedLabel(s) {
    // Only what happened (conversations.views.ended_label says the same on page load).
    if (s.status !== "completed") return "This session has ended.";
    if (s.plan_version) return "Completed. The plan is in the Plan card.";
    if ((s.workflow && s.workflow.answered) || list.querySelector('article.msg[data-node="answer"]')) {
      return "Answered. Ask another question or describe a change in a new session.";
    }
    return "Completed without a plan.";
  }

  function show(id, visible) {
    $(id).hidden = !visible;
  }

  function onState(s) {
    state = s;
    // Other scripts of the page (the rules override box) follow the state without a socket
    // of their own, and send through this one with a "planagents:send" event.
    document.dispatchEvent(new CustomEvent("planagents:state", { detail: s }));
    const badge = $("status-badge");
    badge.className = "badge " + s.status;
    badge.textContent = s.status_label;
    const opts = s.options || [];
    show("checkpoint", opts.includes("approve"));
    show("handover", opts.includes("continue"));
    show("running", s.status === "running");
    updateUsage(s.usage);
    updateTrace(s.usage);
    renderWorkflow(s.workflow);
    show("ended", s.status === "completed" || s.status === "stopped" || s.status === "failed");
    show("composer", !(s.status === "completed" || s.status === "stopped"));
    $("ended-label").textContent = endedLabel(s);
    // A greeting or a question answered instead of planned: no workflow, no task analysis.
    const answered = Boolean(s.workflow && s.workflow.answered);
    if ($("workflow-panel")) show("workflow-panel", !answered);
    if (answered && $("task-analysis")) show("task-analysis", false);
    if (s.progress) setProgress(s.progress.seq, s.progress);
    if (s.status !== "running") { progress.clear(); stopping = ""; outside = null; }
    paintStatusLine();
    const v = $("validation");
    v.textContent = "";
    if (s.validation && s.validation.problems && s.validation.problems.length) {
      const ul = el("ul", "problems");
      for (const p of s.validation.problems) ul.appendChild(el("li", "", p));
      v.appendChild(el("p", "error", "Validation still reports problems:"));
      v.appendChild(ul);
    }
    if (s.plan_version) loadPlan();
  }

  let loadedPlan = null;
  function loadPlan(force) {
    const version = state.plan_version;
    if (!force && loadedPlan === version) return;
    loadedPlan = version;
    fetch(root.dataset.planUrl, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        $("plan").innerHTML = html; // a server template around nh3-sanitized markdown
        show("plan-panel", true);
      })
      .catch(() => {});
  }

  function handle(ev) {
    const wasNear = nearBottom();
    switch (ev.type) {
      case "message.start": onStart(ev.message, ev.replay); break;
      case "message.delta": onDelta(ev); break;
      // Too big for the channel layer (text cut, or its HTML left out): read it from the db.
      case "message.end": onEnd(ev.message, ev.message.truncated || ev.message.html === undefined); break;
      case "session.state": onSessionState(ev); break;
      case "progress": onProgress(ev); break;
      case "stopping": stopping = ev.what; paintStatusLine(); break;
      case "history.gap": onGap(ev); break;
      case "history.end": onHistoryEnd(ev); break;
      case "plan.updated": state.plan_version = ev.version; loadPlan(true); break;
      case "checkpoint": break;
      case "error": $("error").textContent = ev.message; return;
      default: return;
    }
    keepScrolled(wasNear);
  }

  function send(frame) {
    $("error").textContent = "";
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      $("error").textContent = signedOut ? SIGNED_OUT + " to send this." : "Not connected; retrying…";
      return false;
    }
    socket.send(JSON.stringify(frame));
    return true;
  }

  document.addEventListener("planagents:send", (e) => { e.detail.sent = send(e.detail.frame); });

  let resumeAsked = false;
  let replaying = false;
  // Replays run on server threads of their own, so a replay's state (a snapshot) can arrive
  // after live states sent later. Every change sends a live state, so once one has come since
  // the resume was asked, the snapshot is no newer than what the page shows: skip it.
  let liveStateSinceResume = false;
  function onSessionState(ev) {
    if (ev.replay) {
      replaying = false;
      if (liveStateSinceResume) return;
    } else {
      liveStateSinceResume = true;
    }
    onState(ev);
  }
  function requestResume(after) {
    if (resumeAsked) return;
    resumeAsked = true;
    liveStateSinceResume = false;
    send({ type: "resume", after_seq: Math.max(0, after) });
    setTimeout(() => (resumeAsked = false), 500);
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(scheme + "://" + location.host + "/ws/sessions/" + sessionId + "/");
    $("conn").textContent = "connecting…";
    socket.onopen = () => {
      retryDelay = 500;
      $("conn").textContent = "live";
      $("conn").className = "conn live";
      replaying = true;
      liveStateSinceResume = false;
      socket.send(JSON.stringify({ type: "resume", after_seq: resumePoint() }));
    };
    socket.onmessage = (e) => handle(JSON.parse(e.data));
    socket.onclose = (e) => {
      $("conn").className = "conn";
      if (e.code === 4401) {
        signedOut = true;
        $("conn").textContent = SIGNED_OUT;
        const login = el("a", "", "Log in again");
        login.href = "/accounts/login/?next=" + encodeURIComponent(location.pathname);
        $("error").replaceChildren(document.createTextNode("Signed out — "), login);
        return;
      }
      if (e.code === 4404) {
        $("conn").textContent = "not allowed";
        return;
      }
      $("conn").textContent = "reconnecting…";
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 8000);
    };
  }

  document.addEventListener("click", (e) => {
    const fold = e.target.closest("button[data-fold]");
    if (fold) {
      const seq = fold.dataset.fold;
      if (opened.has(seq)) opened.delete(seq); else opened.add(seq);
      collapseSuperseded();
      return;
    }
    const button = e.target.closest("button[data-action]");
    if (!button) return;
    const action = button.dataset.action;
    if (action === "show-modify") {
      $("modify-box").hidden = !$("modify-box").hidden;
      $("modify-text").focus();
      return;
    }
    if (action === "modify") {
      const text = $("modify-text").value.trim();
      if (!text) { $("error").textContent = "Say what should change first."; return; }
      if (send({ type: "control", action: "modify", text })) $("modify-text").value = "";
      return;
    }
    send({ type: "control", action });
  });

  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const box = $("composer-text");
    const text = box.value.trim();
    if (text && send({ type: "user.message", text })) box.value = "";
  });
  $("composer-text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("composer").requestSubmit();
  });

  for (const p of list.querySelectorAll("p.heard")) fillHeard(p);
  for (const a of list.querySelectorAll("article.msg.evidence")) foldEvidence(a);
  collapseSuperseded();
  onState(state);
  updateCost();
  keepScrolled(true);
  connect();
})();
