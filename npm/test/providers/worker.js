// A Worker for providers-workerd.test.mjs: postwire/providers' entries bundled as wrangler
// would (workerd condition, the .wasm imported as a module). POST /stripe, /github and
// /slack (through postwire/hono's createHandler with { provider }) answer the verdict.
import * as stripe from "postwire/providers/stripe";
import * as github from "postwire/providers/github";
import * as slack from "postwire/providers/slack";
import { verify } from "postwire/providers";
import { createHandler } from "postwire/next";

let handled = [];
const slackHandler = createHandler({ "*": (d) => void handled.push(d.id) }, { provider: slack, secret: () => globalThis.SLACK_SECRET });

export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    if (path === "/handled") return Response.json(handled);
    if (path === "/slack") {
      globalThis.SLACK_SECRET = env.SLACK_SECRET;
      return slackHandler(request);
    }
    const body = await request.text();
    try {
      const d =
        path === "/stripe"
          ? stripe.verify(body, request.headers, { secret: env.STRIPE_SECRET })
          : path === "/github"
            ? github.verify(new TextEncoder().encode(body), request.headers, { secret: env.GITHUB_SECRET })
            : verify(body, request.headers, { provider: "stripe", secret: [env.STRIPE_SECRET] });
      return Response.json({ id: d.id, type: d.type, timestamp: d.timestamp, payloadId: d.payload.id ?? null });
    } catch (e) {
      return Response.json({ code: e.code, name: e.name }, { status: 400 });
    }
  },
};
