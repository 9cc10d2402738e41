// The new-session form's estimate follows the mode and models chosen: each row of the estimate
// table carries its own sentences (rendered by the server), and the one matching the selects is
// copied into the summary above it. A choice the table has no row for says so.
(function () {
  "use strict";
  const form = document.getElementById("new-session");
  const box = document.getElementById("estimate");
  if (!form || !box) return;
  const rows = Array.from(box.querySelectorAll("tr[data-mode]"));
  const chosen = document.getElementById("estimate-chosen");
  const basis = document.getElementById("estimate-basis");
  const about = document.getElementById("estimate-for");

  function pick() {
    const mode = form.elements.mode.value;
    const a = form.elements.agent_a_profile.value;
    const b = form.elements.agent_b_profile.value;
    let found = null;
    for (const row of rows) {
      const hit = row.dataset.mode === mode && row.dataset.a === a && row.dataset.b === b;
      row.classList.toggle("chosen", hit);
      if (hit) found = row;
    }
    if (found) {
      about.textContent = found.dataset.for.trim();
      chosen.textContent = found.dataset.summary.trim();
      basis.textContent = found.dataset.basis.trim();
      chosen.classList.toggle("estimate-none", !found.dataset.basis.trim());
    } else {
      about.textContent = "For " + mode + " mode, A on " + a + ", B on " + b + ".";
      chosen.textContent =
        "No estimate on this page for two different models: the table holds both agents on one " +
        "model. Once the session starts, its page shows the estimate for this choice.";
      basis.textContent = "";
      chosen.classList.add("estimate-none");
    }
  }

  form.addEventListener("change", (e) => {
    if (["mode", "agent_a_profile", "agent_b_profile"].includes(e.target.name)) pick();
  });
})();
