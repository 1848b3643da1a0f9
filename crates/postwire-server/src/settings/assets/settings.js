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

// The verify box is a form the server answers (every build); when this build embeds
// the npm package (data-in-browser), it is checked here instead and nothing is sent.
const verifyForm = document.getElementById("verify-form");
if (verifyForm && verifyForm.dataset.inBrowser === "true") {
  verifyForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = document.getElementById("v-result");
    out.textContent = "Checking…";
    // A secret checks `v1` signatures with the default build; otherwise the public key
    // checks `v1a` ones with the postwire/v1a build (its WebAssembly inlined).
    const secret = document.getElementById("v-secret").value.trim();
    const publicKeyField = document.getElementById("v-public-key");
    const key = secret || (publicKeyField ? publicKeyField.value.trim() : "");
    let lib;
    try {
      lib = await import(secret ? "/settings/assets/postwire.js" : "/settings/assets/postwire-v1a.js");
    } catch {
      // Not loadable after all: let the server check it.
      verifyForm.submit();
      return;
    }
    try {
      const wh = new lib.Webhook(key);
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

// The delivery log refreshes itself while something in it may still change (a pending
// delivery, a test event just sent): every 2 s for at most 2 minutes it fetches this
// page again and swaps in the new log, so a test event can be watched arriving. The
// HTML comes from this server, which escaped every value in it.
const log = document.getElementById("log");
if (log && log.dataset.live === "true") {
  let rounds = 0;
  const timer = setInterval(async () => {
    rounds += 1;
    if (rounds > 60 || log.contains(document.activeElement)) {
      if (rounds > 60) clearInterval(timer);
      return;
    }
    try {
      const res = await fetch(location.href, { credentials: "same-origin", headers: { accept: "text/html" } });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById("log");
      if (!fresh) return;
      log.querySelector("ol.log").replaceWith(fresh.querySelector("ol.log"));
      const status = document.getElementById("log-status");
      if (status) status.textContent = `Updated ${new Date().toLocaleTimeString()}`;
      if (fresh.dataset.live !== "true") clearInterval(timer);
    } catch {
      // The next round tries again.
    }
  }, 2000);
}
