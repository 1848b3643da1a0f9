// The page script: the package as a browser bundle would include it (`import "postwire"`,
// bundled by esbuild for the browser), running the portable checks in the page.
import * as postwire from "postwire";
import { runChecks } from "../portable/checks.js";

window.__postwire = runChecks(postwire).then(
  (passed) => ({ passed }),
  (e) => ({ error: String(e && e.stack ? e.stack : e) }),
);
