// Plan page: copy an export to the clipboard (a static file: the CSP allows no inline script).
document.querySelectorAll(".copy-export").forEach(function (button) {
  button.addEventListener("click", async function () {
    var status = document.querySelector(".copy-status");
    try {
      var response = await fetch(button.dataset.url, {credentials: "same-origin"});
      if (!response.ok) throw new Error(response.status);
      await navigator.clipboard.writeText(await response.text());
      status.textContent = "Copied.";
    } catch (e) {
      status.textContent = "Could not copy: open View and copy the text.";
    }
  });
});
