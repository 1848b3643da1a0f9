# Checks of the Worker's local development (worker/README.md), run in its shell after its
# last command: the first delivery was forwarded once, its copy answered as a duplicate,
# and a forged one refused.
[ "$(grep -c "webhook-id=$ID " origin.log)" = 1 ] || { echo "FAILED: the origin did not get $ID exactly once" >&2; cat origin.log >&2; exit 1; }
node examples/send-test.mjs http://127.0.0.1:8787/ "$ID" | grep -q '^200 .*"duplicate"' || { echo "FAILED: no duplicate answer" >&2; exit 1; }
node examples/send-test.mjs http://127.0.0.1:8787/ "${ID}_2" | grep -q '^200 .*"delivered"' || { echo "FAILED: a second id was not delivered" >&2; exit 1; }
WEBHOOK_SECRET=whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= node examples/send-test.mjs http://127.0.0.1:8787/ "${ID}_3" |
  grep -q '^401 .*invalid_signature' || { echo "FAILED: a forged delivery was not refused" >&2; exit 1; }
[ "$(grep -c 'webhook-id=' origin.log)" = 2 ] || { echo "FAILED: the origin got $(grep -c 'webhook-id=' origin.log) deliveries, not 2" >&2; exit 1; }
rm -f .dev.vars origin.log wrangler.log
echo "checked: forwarded once, duplicate answered, forged refused"
