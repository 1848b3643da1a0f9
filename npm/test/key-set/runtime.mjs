// Run by key-set.test.mjs under Deno and Bun: postwire/v1a's RemoteKeySet, resolved by the
// runtime's own export conditions, fetches the test's loopback key set with the runtime's
// global fetch. The deliveries (signed by the test) come in POSTWIRE_KEY_SET_INPUT; between
// the second and the third the test's server rotates the set. Prints one JSON line.
import { RemoteKeySet } from "postwire/v1a";

const text = globalThis.Deno ? globalThis.Deno.env.get("POSTWIRE_KEY_SET_INPUT") : process.env.POSTWIRE_KEY_SET_INPUT;
const { url, deliveries } = JSON.parse(text);
// No interval: each refused delivery fetches again, so the rotation is seen at once.
const keys = new RemoteKeySet(url, { minRefreshIntervalMs: 0 });
const outcome = (d) =>
  keys.verify(d.body, d.headers).then(
    () => "ok",
    (e) => e.code,
  );
const [a, b, forged] = deliveries;
const first = await outcome(a);
const beforeRotation = await outcome(b);
await (await fetch(new URL("/rotate", url))).text();
const afterRotation = await outcome(b);
console.log(JSON.stringify({ first, beforeRotation, afterRotation, forged: await outcome(forged), fetches: keys.fetchCount }));
