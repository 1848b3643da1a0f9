// app.js's Hono app as a Cloudflare Worker (bundled by adapters.test.mjs as wrangler does,
// with the workerd condition, and run in Miniflare).
import { makeApp } from "./app.js";

export default makeApp();
