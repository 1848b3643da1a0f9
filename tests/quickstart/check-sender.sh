# Checks of the sender's quickstart (crates/postwire-cli/README.md), run in its shell
# after its last command: both deliveries reached the receiver, verified, and the sender
# recorded them as delivered.
for _ in $(seq 100); do
  [ "$(grep -c '^ok ' receiver.log)" -ge 2 ] && break
  sleep 0.1
done
grep -q '^ok .*"type":"webhook.test"' receiver.log || { echo "FAILED: the test event was not verified" >&2; cat receiver.log >&2; exit 1; }
grep -q '^ok .*"type":"post.published"' receiver.log || { echo "FAILED: the ingested event was not verified" >&2; cat receiver.log >&2; exit 1; }
if grep -v -e '^ok ' -e '^listening' receiver.log; then echo "FAILED: the receiver refused a delivery" >&2; exit 1; fi
curl -s "http://127.0.0.1:8080/public/v1/workspaces/ws_1/webhooks/$SUB/deliveries" -H "Authorization: Bearer $TOKEN" |
  python3 -c '
import json, sys
deliveries = json.load(sys.stdin)["data"]
states = sorted(d["state"] for d in deliveries)
assert states == ["delivered", "delivered"], f"the sender recorded {states}"
print("checked: 2 deliveries verified by the receiver and recorded as delivered")
'
postwire portal link --workspace ws_1 | grep -q '^http://.*/settings/' || { echo "FAILED: no Settings link" >&2; exit 1; }
