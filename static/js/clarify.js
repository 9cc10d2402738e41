// The answer box for Agent A's clarifying question (templates/conversations/_clarify.html).
// The question is an ordinary message starting "**Question for you:**"; the box shows while the
// session waits for the human and no message of theirs came after the question. The answer is
// sent through the page's composer, as any message to the agents is.
(function () {
  "use strict";
  const box = document.getElementById("clarify");
  const list = document.getElementById("messages");
  const badge = document.getElementById("status-badge");
  if (!box || !list || !badge) return;
  const HEAD = "Question for you:";

  function pending() {
    const rows = Array.from(list.querySelectorAll("article.msg"));
    for (let i = rows.length - 1; i >= 0; i--) {
      const row = rows[i];
      if (row.classList.contains("role-user")) return "";
      const body = row.querySelector(".body");
      const head = body && body.querySelector("strong");
      if (row.classList.contains("agent-A") && head && head.textContent.trim() === HEAD) {
        return body.textContent.trim().slice(HEAD.length).trim();
      }
    }
    return "";
  }

  function update() {
    const question = badge.classList.contains("awaiting_human") ? pending() : "";
    box.hidden = !question;
    // This box replaces the generic "handed the floor to you" one while a question waits
    // (it runs after session.js's state handler: observers fire once that handler is done).
    const handover = document.getElementById("handover");
    if (question && handover) handover.hidden = true;
    if (question) document.getElementById("clarify-question").textContent = question;
  }

  document.getElementById("clarify-send").addEventListener("click", () => {
    const answer = document.getElementById("clarify-text");
    const composer = document.getElementById("composer");
    const text = document.getElementById("composer-text");
    if (!answer.value.trim() || !composer || !text) return;
    text.value = answer.value;
    composer.requestSubmit();
    answer.value = "";
  });

  new MutationObserver(update).observe(list, { childList: true, subtree: true, characterData: true });
  new MutationObserver(update).observe(badge, { attributes: true, childList: true, characterData: true });
  update();
})();
