// postwire/next: a Next.js App Router route handler, in app/webhooks/route.ts:
//   export const POST = createHandler({ "post.published": async (event) => ... }, { secret: process.env.WEBHOOK_SECRET });
// It is a plain `(request: Request) => Promise<Response>`, so it also serves as
// `Bun.serve({ fetch })`, `Deno.serve(handler)` or a Worker's `fetch`.
import { createDispatcher, memoryStore } from "./core.js";

export { memoryStore };
export { processOnce } from "../once.js";

/** A Fetch route handler that verifies, de-duplicates and dispatches a delivery (answers: see core.js). */
export function createHandler(handlers, options) {
  const dispatch = createDispatcher(handlers, options);
  return async function POST(request) {
    if (request.bodyUsed) {
      return Response.json(
        { code: "invalid_payload", message: "the request body was already read; the handler must read the raw body itself" },
        { status: 500 },
      );
    }
    const body = new Uint8Array(await request.arrayBuffer());
    const { status, json, headers } = await dispatch(body, request.headers);
    return json === undefined ? new Response(null, { status, headers }) : Response.json(json, { status, headers });
  };
}
