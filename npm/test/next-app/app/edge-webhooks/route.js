// The same handler on Next.js's Edge runtime (`runtime = "edge"`): Next's edge compiler
// resolves postwire's `edge-light` build and turns its `?module` import into a
// WebAssembly.Module that `next start` hands to its edge sandbox (Vercel's edge-runtime
// package), where wasm is not compiled from bytes. GET answers what the handler saw there.
import { createHandler } from "postwire/next";
import { Webhook } from "postwire";

export const runtime = "edge";

export const POST = createHandler(
  {
    "webhook.test": async (event) => {
      globalThis.__edgeSeen = [...(globalThis.__edgeSeen ?? []), [event.type, event.id, event.data.message.length]];
    },
  },
  // Read per request: the environment of the edge sandbox.
  { secret: () => process.env.POSTWIRE_TEST_SECRET, onError: () => {} },
);

export function GET() {
  const internals = Webhook[Symbol.for("postwire.internals")];
  return Response.json({ seen: globalThis.__edgeSeen ?? [], nativeHmac: internals.nativeHmac, edgeRuntime: typeof EdgeRuntime });
}
