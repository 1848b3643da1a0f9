// A Next.js App Router route handler, exactly as the README shows: postwire/next's
// createHandler as the POST export. The test (../../next.test.mjs) builds and starts this
// app with the real `next` and posts deliveries to it.
import { createHandler } from "postwire/next";

export const POST = createHandler(
  {
    "webhook.test": async (event) => {
      // What the handler saw, for the test to read back.
      globalThis.__seen = [...(globalThis.__seen ?? []), [event.type, event.id, event.data.message]];
      if (event.data.message === "fail") throw new Error("handler failed on purpose");
    },
  },
  { secret: process.env.POSTWIRE_TEST_SECRET, onError: () => {} },
);
