// Polls a codebase's status while it is indexed and reloads the page when it is done.
(function () {
  "use strict";
  var box = document.getElementById("codebase-progress");
  if (!box) return;
  var url = box.getAttribute("data-status-url");
  var bar = box.querySelector(".progress > div");
  var stage = box.querySelector("[data-stage]");
  var percent = box.querySelector("[data-percent]");
  var badge = document.getElementById("codebase-status");
  // The width is set here, not in an inline style, so a strict CSP (production) allows it.
  bar.style.width = box.querySelector(".progress").getAttribute("aria-valuenow") + "%";

  function tick() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (res) { return res.ok ? res.json() : Promise.reject(res.status); })
      .then(function (data) {
        if (data.status === "ready" || data.status === "failed") {
          window.location.reload();
          return;
        }
        bar.style.width = data.progress + "%";
        box.querySelector(".progress").setAttribute("aria-valuenow", data.progress);
        stage.textContent = data.stage || "waiting to start";
        percent.textContent = data.progress;
        if (badge) { badge.className = "badge " + data.status; }
        setTimeout(tick, 500);
      })
      .catch(function () { setTimeout(tick, 2000); });
  }
  setTimeout(tick, 500);
})();
