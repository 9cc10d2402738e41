// The codebase page: polls the status while the codebase is indexed (reloading when done),
// and opens folders of the file tree in place, fetching one folder's entries at a time.
(function () {
  "use strict";

  function pollProgress(box) {
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
  }

  // Vectors fill in after the codebase opens: keep the count current until they are all in.
  function pollVectors(note) {
    var url = note.getAttribute("data-status-url");
    var count = document.getElementById("vectors-count");
    function tick() {
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (res) { return res.ok ? res.json() : Promise.reject(res.status); })
        .then(function (data) {
          var v = data.vectors || { done: 0, total: 0 };
          var text = v.done + " of " + v.total;
          if (count) { count.textContent = text; }
          if (data.status !== "ready" || v.done >= v.total) {
            note.textContent = data.status === "ready" ? "All " + v.total + " vectors are in." : "";
            if (data.status !== "ready") { window.location.reload(); }
            return;
          }
          note.textContent = "Vectors: " + text + ", still being computed. Search works already" +
            " (by words, symbols and paths) and uses each vector as it lands.";
          setTimeout(tick, 3000);
        })
        .catch(function () { setTimeout(tick, 5000); });
    }
    setTimeout(tick, 3000);
  }

  // Entries are built with textContent, never HTML: file names are uploaded text.
  function entryItem(entry) {
    var li = document.createElement("li");
    if (entry.dir) {
      var details = document.createElement("details");
      details.setAttribute("data-folder", entry.path);
      var summary = document.createElement("summary");
      summary.textContent = entry.name + "/ ";
      var count = document.createElement("span");
      count.className = "muted";
      count.textContent = entry.files;
      summary.appendChild(count);
      details.appendChild(summary);
      details.appendChild(document.createElement("ul"));
      li.appendChild(details);
      return li;
    }
    var name = document.createElement(entry.url ? "a" : "span");
    if (entry.url) { name.href = entry.url; }
    name.textContent = entry.name;
    li.appendChild(name);
    var meta = document.createElement("span");
    meta.className = "muted";
    meta.textContent = " " + entry.lines + " lines · " + entry.role;
    li.appendChild(meta);
    if (entry.withheld) {
      var badge = document.createElement("span");
      badge.className = "badge failed";
      badge.title = entry.withheld;
      badge.textContent = "withheld";
      li.appendChild(document.createTextNode(" "));
      li.appendChild(badge);
    }
    return li;
  }

  function openFolder(treeUrl, details) {
    if (details.getAttribute("data-loaded")) return;
    details.setAttribute("data-loaded", "loading");
    var list = details.querySelector("ul");
    var url = treeUrl + "?folder=" + encodeURIComponent(details.getAttribute("data-folder"));
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (res) { return res.ok ? res.json() : Promise.reject(res.status); })
      .then(function (data) {
        var items = document.createDocumentFragment();
        data.entries.forEach(function (entry) { items.appendChild(entryItem(entry)); });
        list.replaceChildren(items);
        details.setAttribute("data-loaded", "yes");
      })
      .catch(function () {
        details.removeAttribute("data-loaded");  // let the next toggle try again
      });
  }

  var box = document.getElementById("codebase-progress");
  if (box) { pollProgress(box); }
  var vectors = document.getElementById("vectors-filling");
  if (vectors && !box) { pollVectors(vectors); }
  var tree = document.getElementById("file-tree");
  if (tree) {
    var treeUrl = tree.getAttribute("data-tree-url");
    // "toggle" does not bubble; listening in the capture phase catches every folder, also
    // the ones added later.
    tree.addEventListener("toggle", function (event) {
      var details = event.target;
      if (details.open && details.hasAttribute("data-folder")) { openFolder(treeUrl, details); }
    }, true);
  }
})();
