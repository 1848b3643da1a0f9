# Checks of the Rust receiver's quickstart (crates/postwire-core/README.md), run in its
# shell after its last command: the delivery was verified, a forged one is refused.
for _ in $(seq 50); do grep -q '^verified msg_1 webhook.test$' receiver.log && break; sleep 0.1; done
grep -q '^verified msg_1 webhook.test$' receiver.log || { echo "FAILED: the delivery was not verified" >&2; cat receiver.log >&2; exit 1; }
TS=$(date +%s)
status=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:3000/webhooks --data-binary @event.json \
  -H 'content-type: application/json' -H 'webhook-id: msg_1' -H "webhook-timestamp: $TS" \
  -H "webhook-signature: $(postwire sign --secret "$(postwire secret new)" --id msg_1 --timestamp "$TS" event.json)")
[ "$status" = 400 ] || { echo "FAILED: a forged delivery got $status, not 400" >&2; exit 1; }
echo "checked: verified (204) and forged refused (400)"
