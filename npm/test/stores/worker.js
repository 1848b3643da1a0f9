// A Worker for the Cloudflare stores' tests in workerd (Miniflare): POST /op with
// {store: "d1" | "do" | "kv", times, op, id, token} calls that store's method and answers
// its result as JSON, so the shared conformance suite runs against real D1, Durable
// Object and KV bindings. Bundled from postwire/stores/cloudflare by stores.test.mjs.
import { d1Store, durableObjectStore, kvStore, PostwireOnceObject } from "postwire/stores/cloudflare";

export { PostwireOnceObject };

const stores = new Map();
function storeFor(env, kind, times) {
  const key = `${kind} ${JSON.stringify(times)}`;
  if (!stores.has(key)) {
    const make = { d1: () => d1Store(env.DB, times), do: () => durableObjectStore(env.ONCE, times), kv: () => kvStore(env.KV, times) }[kind];
    stores.set(key, make());
  }
  return stores.get(key);
}

export default {
  async fetch(request, env) {
    const { store, times, op, id, token } = await request.json();
    try {
      return Response.json({ result: await storeFor(env, store, times)[op](id, token) });
    } catch (err) {
      return Response.json({ error: String(err?.stack ?? err) }, { status: 500 });
    }
  },
};
