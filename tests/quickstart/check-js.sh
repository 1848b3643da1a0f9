# Checks of the JavaScript receiver's quickstart (npm/README.md), run in its shell after
# its last command: each server verifies a signed delivery (204) and refuses a bad one.
for url in http://localhost:3000/webhooks http://localhost:3001/webhooks http://localhost:3002/webhooks; do
  node send-test.mjs "$url" | grep -qx "$url 204" || { echo "FAILED: $url did not answer 204" >&2; exit 1; }
  WEBHOOK_SECRET=$(node -p 'require("postwire").generateSecret()') node send-test.mjs "$url" | grep -qx "$url 400" ||
    { echo "FAILED: $url did not refuse a delivery signed with another secret" >&2; exit 1; }
done
grep -q '"postwire": "file:' package.json || { echo "FAILED: postwire was not installed from the packed tarball" >&2; exit 1; }
echo "checked: Express, Hono and Next.js each verified a delivery (204) and refused a forged one (400)"
