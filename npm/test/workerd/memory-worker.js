// A Worker that builds a `Webhook` per verification, as the README's Workers example does
// per request: /loop?n=N verifies the request's delivery N times, each with a new object,
// and reports whether the runtime has FinalizationRegistry and the wasm memory's size.
import { Webhook } from "postwire";

export default {
  async fetch(request, env) {
    const n = Number(new URL(request.url).searchParams.get("n") ?? 1);
    const body = await request.text();
    const headers = Object.fromEntries(request.headers);
    let verified = 0;
    for (let i = 0; i < n; i++) {
      const webhook = new Webhook(env.WEBHOOK_SECRET);
      if (webhook.verify(body, headers).type === "webhook.test") verified++;
    }
    return Response.json({
      verified,
      finalizationRegistry: typeof FinalizationRegistry,
      wasmMemoryBytes: Webhook[Symbol.for("postwire.internals")].memoryBytes(),
    });
  },
};
