// The benchmark inside workerd (bundled by ../runtimes.mjs as wrangler would). workerd's
// clock does not advance during CPU work, so the host times the requests:
//   /check?size=S        every verifier accepts a delivery of S bytes and rejects a tampered one
//   /run?lib=L&size=S&n=N  verifier L verifies N deliveries of S bytes (a fresh object each)
import * as postwire from "postwire";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { verifiers, delivery, agree, repeat } from "./cases.js";

const libs = verifiers({ postwire, StandardWebhook, nodeCrypto: null });
const deliveries = new Map();

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const size = Number(url.searchParams.get("size"));
    // Signed afresh at each /check (the host checks each size before timing it).
    if (url.pathname === "/check" || !deliveries.has(size)) deliveries.set(size, delivery(StandardWebhook, size));
    const d = deliveries.get(size);
    if (url.pathname === "/check") {
      await agree(libs, d);
      return Response.json({ libs: Object.keys(libs) });
    }
    const fn = libs[url.searchParams.get("lib")];
    await repeat(fn, Number(url.searchParams.get("n")), d.payload, d.headers);
    return new Response("ok");
  },
};
