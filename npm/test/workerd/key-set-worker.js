// The Worker of key-set-workerd.test.mjs: postwire/v1a's RemoteKeySet inside workerd, one
// per key set URL and interval (from the query), kept at module level so it lives across
// requests in the isolate as an application's would.
//   POST /hook?keys=<url>&interval=<ms>  → 200 {id} | 400/503 {code}
//   GET  /stats?keys=<url>&interval=<ms> → {fetchCount, keys, lastError}
import { RemoteKeySet, WebhookVerificationError } from "postwire/v1a";

const sets = new Map();

function keySet(url) {
  const keys = url.searchParams.get("keys");
  const interval = Number(url.searchParams.get("interval") ?? "60000");
  const name = `${keys}|${interval}`;
  if (!sets.has(name)) sets.set(name, new RemoteKeySet(keys, { minRefreshIntervalMs: interval, timeoutMs: 1000 }));
  return sets.get(name);
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const keys = keySet(url);
    if (url.pathname === "/stats") {
      return Response.json({ fetchCount: keys.fetchCount, keys: keys.publicKeys.length, lastError: keys.lastError?.code ?? null });
    }
    try {
      const event = await keys.verifyEvent(new Uint8Array(await request.arrayBuffer()), request.headers);
      return Response.json({ id: event.id });
    } catch (e) {
      if (!(e instanceof WebhookVerificationError)) throw e;
      const status = e.code === "key_set_unavailable" || e.code === "invalid_key_set" ? 503 : 400;
      return Response.json({ code: e.code }, { status });
    }
  },
};
