// The checkpoint's rules override: shown while the proposal breaks a critical codebase rule.
// It follows the session's state through session.js's "planagents:state" events and sends the
// one approve-with-override frame through session.js's socket ("planagents:send").
(function () {
  "use strict";
  const root = document.getElementById("session");
  const box = document.getElementById("rules-override");
  if (!root || !box) return;
  const list = document.getElementById("rules-blocking");
  const reason = document.getElementById("rules-override-reason");
  const error = document.getElementById("rules-override-error");

  function render(state) {
    const blocking = (state && state.rules && state.rules.blocking) || [];
    const atCheckpoint = ((state && state.options) || []).includes("approve");
    list.textContent = "";
    for (const v of blocking) {
      const li = document.createElement("li");
      li.textContent = v.label + ": " + v.text + (v.explanation ? " — " + v.explanation : "");
      list.appendChild(li);
    }
    box.hidden = !(atCheckpoint && blocking.length);
  }

  document.addEventListener("planagents:state", (e) => render(e.detail));

  box.addEventListener("click", (e) => {
    if (!e.target.closest("button[data-rules-override]")) return;
    const text = reason.value.trim();
    error.textContent = "";
    if (!text) { error.textContent = "Give the reason for overriding the rule(s) first."; return; }
    const request = { frame: { type: "control", action: "approve", override: text } };
    document.dispatchEvent(new CustomEvent("planagents:send", { detail: request }));
    if (!request.sent) { error.textContent = "Not connected; retrying…"; return; }
    const pageError = document.getElementById("error");
    if (pageError) pageError.textContent = ""; // a refused plain Approve said why; now moot
    reason.value = "";
  });

  const initial = document.getElementById("initial-state");
  if (initial) render(JSON.parse(initial.textContent));
})();
