// Live planning session: renders streamed agent replies, resumes by seq after reconnects,
// and sends the human's messages and decisions. Model text is inserted as text while it
// streams; the final HTML comes from the server, already sanitized.
(function () {
  "use strict";
  const root = document.getElementById("session");
  if (!root) return;
  const sessionId = root.dataset.sessionId;
  const list = document.getElementById("messages");
  const $ = (id) => document.getElementById(id);
  const texts = new Map(); // seq -> text received so far for streaming messages
  let socket = null;
  let retryDelay = 500;
  let state = JSON.parse($("initial-state").textContent);

  function resumePoint() {
    // Everything up to the first message still streaming is complete on screen.
    let point = 0;
    for (const el of list.querySelectorAll("article.msg")) {
      const seq = Number(el.dataset.seq);
      if (el.classList.contains("state-streaming")) return seq - 1;
      point = Math.max(point, seq);
    }
    return point;
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 160;
  }
  function keepScrolled(wasNear) {
    if (wasNear) window.scrollTo(0, document.body.scrollHeight);
  }

  function who(m) {
    if (m.role === "agent") return "Agent " + m.agent;
    if (m.role === "user") return "You";
    return "System";
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function header(m) {
    const h = el("header");
    h.appendChild(el("span", "who", who(m)));
    if (m.node) h.appendChild(el("span", "node", m.node));
    if (m.signal) h.appendChild(el("span", "signal", m.signal));
    if (m.state === "interrupted") h.appendChild(el("span", "badge failed", "interrupted"));
    if (m.state === "streaming") h.appendChild(el("span", "typing", "writing…"));
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

  function upsert(m) {
    let node = document.getElementById("m" + m.seq);
    const fresh = el("article", "msg role-" + m.role + (m.agent ? " agent-" + m.agent : "") + " state-" + m.state);
    fresh.id = "m" + m.seq;
    fresh.dataset.seq = m.seq;
    fresh.dataset.tokens = (m.prompt_tokens || 0) + (m.completion_tokens || 0);
    fresh.dataset.cost = m.cost_usd === null || m.cost_usd === undefined ? "" : m.cost_usd;
    fresh.appendChild(header(m));
    const body = el("div", "body md");
    if (m.html !== undefined && m.state !== "streaming") {
      body.innerHTML = m.html; // sanitized server-side with nh3
    } else {
      body.classList.add("raw");
      body.textContent = m.content || "";
    }
    fresh.appendChild(body);
    const cites = citations(m);
    if (cites) fresh.appendChild(cites);
    if (node) {
      node.replaceWith(fresh);
    } else {
      // Keep seq order even if events arrive out of order.
      const after = Array.from(list.children).find((c) => Number(c.dataset.seq) > m.seq);
      list.insertBefore(fresh, after || null);
    }
    return fresh;
  }

  function onStart(m) {
    texts.set(m.seq, m.content || "");
    upsert(m);
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
    node.querySelector(".body").textContent = next;
  }

  function onEnd(m, truncated) {
    if (truncated) return requestResume(m.seq - 1); // too big for the channel layer: read the db
    texts.delete(m.seq);
    upsert(m);
    updateMeter();
  }

  function updateMeter() {
    let tokens = 0;
    let cost = 0;
    let priced = false;
    for (const node of list.querySelectorAll("article.msg")) {
      tokens += Number(node.dataset.tokens || 0);
      if (node.dataset.cost) { cost += Number(node.dataset.cost); priced = true; }
    }
    let text = tokens ? tokens.toLocaleString() + " tokens used in this session" : "–";
    if (priced) text += " · about $" + cost.toFixed(4);
    $("meter").textContent = text;
  }

  function updateBudget(u) {
    if (!u) return;
    const parts = [u.calls + (u.call_budget ? " of " + u.call_budget : "") + " LLM calls"];
    if (u.token_budget) parts.push(u.tokens.toLocaleString() + " of " + u.token_budget.toLocaleString() + " tokens budgeted");
    $("budget").textContent = parts.join(" · ");
  }

  function show(id, visible) {
    $(id).hidden = !visible;
  }

  function onState(s) {
    state = s;
    const badge = $("status-badge");
    badge.className = "badge " + s.status;
    badge.textContent = s.status_label;
    const opts = s.options || [];
    show("checkpoint", opts.includes("approve"));
    show("handover", opts.includes("continue"));
    show("running", s.status === "running");
    updateBudget(s.usage);
    show("ended", s.status === "completed" || s.status === "stopped" || s.status === "failed");
    show("composer", !(s.status === "completed" || s.status === "stopped"));
    $("ended-label").textContent = s.status === "completed" ? "Completed. The plan is on the right." : "This session has ended.";
    const running = $("running-label");
    running.textContent = s.node && s.mode === "planning" ? "Agents are working: " + s.node.replace(/_/g, " ") + "…" : "Agents are working…";
    const wf = $("workflow");
    if (wf) {
      let reached = true;
      for (const li of wf.children) {
        li.classList.toggle("current", li.dataset.node === s.node);
        li.classList.toggle("done", reached && li.dataset.node !== s.node);
        if (li.dataset.node === s.node) reached = false;
      }
      if (s.node === "completed") for (const li of wf.children) li.classList.add("done");
    }
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
      case "message.start": onStart(ev.message); break;
      case "message.delta": onDelta(ev); break;
      case "message.end": onEnd(ev.message, ev.truncated); break;
      case "session.state": replaying = false; onState(ev); break;
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
      $("error").textContent = "Not connected; retrying…";
      return false;
    }
    socket.send(JSON.stringify(frame));
    return true;
  }

  let resumeAsked = false;
  let replaying = false;
  function requestResume(after) {
    if (resumeAsked) return;
    resumeAsked = true;
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
      socket.send(JSON.stringify({ type: "resume", after_seq: resumePoint() }));
    };
    socket.onmessage = (e) => handle(JSON.parse(e.data));
    socket.onclose = (e) => {
      $("conn").className = "conn";
      if (e.code === 4401 || e.code === 4404) {
        $("conn").textContent = "not allowed";
        return;
      }
      $("conn").textContent = "reconnecting…";
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 8000);
    };
  }

  document.addEventListener("click", (e) => {
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

  onState(state);
  updateMeter();
  keepScrolled(true);
  connect();
})();
