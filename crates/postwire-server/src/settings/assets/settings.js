// The Settings screen's progressive script: copy buttons, and the verify box (postwire's
// npm package, browser build, run in the page). Every page works without it.
"use strict";

document.addEventListener("click", async (e) => {
  const button = e.target.closest("button[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  const status = button.parentElement.querySelector(".copied");
  try {
    await navigator.clipboard.writeText(field.value);
    if (status) status.textContent = "Copied.";
  } catch {
    field.select();
    if (status) status.textContent = "Select the text and copy it (Ctrl+C).";
  }
});

function parseHeaders(text) {
  const headers = {};
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return headers;
}

const verifyForm = document.getElementById("verify-form");
if (verifyForm) {
  verifyForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = document.getElementById("v-result");
    out.textContent = "Checking…";
    let lib;
    try {
      lib = await import("/settings/assets/postwire.js");
    } catch {
      out.textContent = "The verifier is not part of this server build (build the npm package first).";
      return;
    }
    try {
      const wh = new lib.Webhook(document.getElementById("v-secret").value.trim());
      const body = document.getElementById("v-body").value;
      const headers = parseHeaders(document.getElementById("v-headers").value);
      const event = wh.verifyEvent(body, headers);
      out.textContent = `Valid: ${event.type} ${event.id}`;
      out.dataset.result = "valid";
    } catch (err) {
      out.textContent = `Not valid: ${err.code || "error"}: ${err.message}`;
      out.dataset.result = "invalid";
    }
  });
}
