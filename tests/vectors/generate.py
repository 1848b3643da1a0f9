#!/usr/bin/env python3
"""Writes the shared test vectors (sign.json, verify.json, events.json, matching.json, and
for the opt-in v1a extension keys.json, sign_v1a.json, verify_v1a.json) and
the event catalogue (catalogue.json): every event type with its description and a sample,
and every value of every enum of the events, transcribed here from the spec. It is the one
source the other copies of the catalogue are checked against: postwire-core's enums, the
server's OpenAPI enums, the npm package's checks and its TypeScript types, and the
playground's samples each have a test that compares them with catalogue.json.

Signatures are computed here with Python's own hmac/hashlib/base64, independently of the
Rust code they test, so a bug in postwire-core cannot hide by agreeing with itself. The
Standard Webhooks reference vector is included verbatim. The v1a (ed25519) vectors are
signed with the `cryptography` package (tests/vectors/requirements.txt, in .venv), not with
the Rust crate under test. Run: .venv/bin/python tests/vectors/generate.py
Output is deterministic: re-running it must not change the files (CI checks this).
"""
import base64
import hashlib
import hmac
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

REF_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
REF_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
REF_TS = 1614265330
REF_BODY = '{"test": 2432232314}'
REF_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

SECRET_B = "whsec_" + base64.b64encode(bytes(range(1, 33))).decode()   # a second 32-byte key
SECRET_64 = "whsec_" + base64.b64encode(bytes(range(64))).decode()     # the longest generated size


def key(secret):
    """The key of a secret, by the rule of postwire-core's Secret::parse (the leniency of the
    `standardwebhooks` npm package): surrounding whitespace and up to two trailing `=` are
    dropped, a lone last character after groups of four is ignored, and spare bits in the
    last character are ignored (Python's non-strict decoder ignores them too)."""
    s = secret.strip(" \t\r\n\f")
    s = s[len("whsec_"):] if s.startswith("whsec_") else s
    b = s.rstrip("=")
    assert len(s) - len(b) <= 2, "more than two `=` is rejected"
    if len(b) % 4 == 1:
        b = b[:-1]
    assert all(c.isascii() and (c.isalnum() or c in "+/") for c in b), "not base64"
    return base64.b64decode(b + "=" * (-len(b) % 4))


def sign(secret, msg_id, ts, body: bytes):
    mac = hmac.new(key(secret), f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def body_fields(body: bytes):
    try:
        return {"body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(body).decode()}


def write(name, description, cases):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump({"description": description, "cases": cases}, f, indent=2, ensure_ascii=False)
        f.write("\n")


# ---------------------------------------------------------------- sign.json
assert sign(REF_SECRET, REF_ID, REF_TS, REF_BODY.encode()) == REF_SIG, "reference vector"
sign_cases = []
def sign_case(name, secret, msg_id, ts, body: bytes):
    sign_cases.append({"name": name, "secret": secret, "id": msg_id, "timestamp": ts, **body_fields(body),
                       "signature": sign(secret, msg_id, ts, body)})

sign_case("standard webhooks reference vector", REF_SECRET, REF_ID, REF_TS, REF_BODY.encode())
sign_case("secret without the whsec_ prefix", REF_SECRET[6:], REF_ID, REF_TS, REF_BODY.encode())
sign_case("empty body", REF_SECRET, "msg_empty", 1700000000, b"")
sign_case("non-UTF-8 body (bytes, not text)", REF_SECRET, "msg_bytes", 1700000000, bytes([0xff, 0xfe, 0x00, 0x80, 0x7b]))
sign_case("unicode body", SECRET_B, "msg_unicode", 1700000001, '{"name":"Zoë 🚀 ünïcødé"}'.encode())
sign_case("64-byte key", SECRET_64, "msg_long_key", 1700000002, b'{"type":"webhook.test"}')
sign_case("4 KiB body", SECRET_B, "msg_4k", 1700000003, (b'{"pad":"' + b"x" * 4085 + b'"}'))
sign_case("body with newlines and trailing whitespace", REF_SECRET, "msg_ws", 1700000004, b'{\n  "a": 1\n}\n ')
# Secrets as deployments mangle them, all accepted by the `standardwebhooks` npm package
# with these keys (npm/test/secrets.test.mjs checks that against the package itself).
sign_case("secret with a trailing newline (read from a file)", REF_SECRET + "\n", REF_ID, REF_TS, REF_BODY.encode())
sign_case("secret with a trailing space", REF_SECRET + " ", REF_ID, REF_TS, REF_BODY.encode())
sign_case("secret with excess = padding", REF_SECRET + "==", REF_ID, REF_TS, REF_BODY.encode())
sign_case("secret of 4k+1 characters: the last one is ignored", REF_SECRET + "x", REF_ID, REF_TS, REF_BODY.encode())
_b = SECRET_B.rstrip("=")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
SECRET_B_SPARE = _b[:-1] + _ALPHABET[_ALPHABET.index(_b[-1]) | 0b11]   # the 2 spare bits set
assert SECRET_B_SPARE != _b and key(SECRET_B_SPARE) == key(SECRET_B)
sign_case("unpadded secret whose last character has non-zero spare bits", SECRET_B_SPARE, "msg_unicode", 1700000001,
          '{"name":"Zoë 🚀 ünïcødé"}'.encode())
assert sign_cases[0]["signature"] == REF_SIG
assert sign_cases[-1]["signature"] == sign_cases[4]["signature"] and sign_cases[-5]["signature"] == REF_SIG
write("sign.json", "Known-answer signatures: `signature` is the webhook-signature value for one secret. "
      "Computed by generate.py with Python's hmac, independently of the Rust code.", sign_cases)

# ---------------------------------------------------------------- verify.json
T = 1700000000
EVENT = '{"id":"msg_v","type":"webhook.test","createdAt":"2023-11-14T22:13:20.000Z","workspaceId":"ws_1","data":{"message":"hello"}}'
B = EVENT.encode()
GOOD = sign(REF_SECRET, "msg_v", T, B)
OTHER = sign(SECRET_B, "msg_v", T, B)

verify_cases = []
def vcase(name, headers, body=B, now=T, ok=True, error=None, secrets=(REF_SECRET,), tolerance=None):
    c = {"name": name, "secrets": list(secrets), "headers": headers, **body_fields(body), "now": now}
    if tolerance is not None:
        c["tolerance"] = tolerance
    c["ok"] = ok
    if error:
        c["error"] = error
    verify_cases.append(c)

def hdrs(msg_id="msg_v", ts=T, sig=GOOD):
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": sig}

vcase("reference vector", {"webhook-id": REF_ID, "webhook-timestamp": str(REF_TS), "webhook-signature": REF_SIG},
      body=REF_BODY.encode(), now=REF_TS)
vcase("valid delivery", hdrs())
vcase("header names in any case", {"Webhook-Id": "msg_v", "WEBHOOK-TIMESTAMP": str(T), "Webhook-Signature": GOOD})
vcase("300 s old passes", hdrs(), now=T + 300)
vcase("301 s old fails", hdrs(), now=T + 301, ok=False, error="timestamp_too_old")
vcase("300 s in the future passes", hdrs(), now=T - 300)
vcase("301 s in the future fails", hdrs(), now=T - 301, ok=False, error="timestamp_too_new")
vcase("custom tolerance of 10 s: 11 s old fails", hdrs(), now=T + 11, tolerance=10, ok=False, error="timestamp_too_old")
vcase("a day old fails", hdrs(), now=T + 86400, ok=False, error="timestamp_too_old")
for h in ["webhook-id", "webhook-timestamp", "webhook-signature"]:
    hh = hdrs(); del hh[h]
    vcase(f"missing {h}", hh, ok=False, error="missing_header")
vcase("timestamp with trailing characters", hdrs(ts=f"{T}abc"), ok=False, error="invalid_header")
vcase("negative timestamp", hdrs(ts="-1"), ok=False, error="invalid_header")
vcase("fractional timestamp", hdrs(ts=f"{T}.5"), ok=False, error="invalid_header")
vcase("empty timestamp", hdrs(ts=""), ok=False, error="invalid_header")
vcase("timestamp in milliseconds is far in the future", hdrs(ts=T * 1000), ok=False, error="timestamp_too_new")
vcase("empty id", hdrs(msg_id=""), ok=False, error="invalid_header")
vcase("id with a space", hdrs(msg_id="msg v"), ok=False, error="invalid_header")
vcase("tampered body (one byte)", hdrs(), body=B.replace(b"hello", b"hellp"), ok=False, error="invalid_signature")
vcase("re-serialized body (whitespace added) does not verify", hdrs(),
      body=json.dumps(json.loads(EVENT)).encode(), ok=False, error="invalid_signature")
vcase("signature for another id", hdrs(msg_id="msg_w"), ok=False, error="invalid_signature")
vcase("signature for another timestamp", hdrs(ts=T + 1), now=T, ok=False, error="invalid_signature")
vcase("wrong secret", hdrs(sig=OTHER), ok=False, error="invalid_signature")
vcase("tampered signature", hdrs(sig=GOOD[:-5] + ("A" if GOOD[-5] != "A" else "B") + GOOD[-4:]), ok=False, error="invalid_signature")
vcase("second of two signatures matches", hdrs(sig=f"{OTHER} {GOOD}"))
vcase("unknown versions are skipped", hdrs(sig=f"v2,{GOOD[3:]} v1a,{GOOD[3:]} {GOOD}"))
vcase("only another version", hdrs(sig=f"v2,{GOOD[3:]}"), ok=False, error="invalid_signature")
vcase("v1,<sig>,extra is malformed and skipped", hdrs(sig=f"{GOOD},extra"), ok=False, error="invalid_signature")
vcase("two header lines joined with \", \" (Fetch API, Node): the first still counts",
      hdrs(sig=f"{GOOD}, {OTHER}"))
vcase("v1,<sig>,, (two trailing commas) is malformed and skipped", hdrs(sig=f"{GOOD},,"), ok=False,
      error="invalid_signature")
vcase("malformed entries beside a good one are skipped", hdrs(sig=f"garbage v1, v1,!!!! {GOOD},x {GOOD}"))
vcase("unpadded signature is accepted", hdrs(sig=GOOD.rstrip("=")))
vcase("extra spaces between signatures", hdrs(sig=f"  {OTHER}    {GOOD}  "))
vcase("surrounding whitespace in header values", {"webhook-id": " msg_v", "webhook-timestamp": f"{T} ", "webhook-signature": f" {GOOD}"})
vcase("empty signature header", hdrs(sig=""), ok=False, error="invalid_signature")
vcase("64 signatures, last one good", hdrs(sig=" ".join([OTHER] * 63 + [GOOD])))
vcase("65 signatures are too many", hdrs(sig=" ".join([OTHER] * 64 + [GOOD])), ok=False, error="invalid_header")
vcase("signature header over 8 KiB", hdrs(sig=GOOD + " " + "x" * 8192), ok=False, error="invalid_header")
vcase("rotation: header carries old and new, verifier has only the new", hdrs(sig=f"{GOOD} {OTHER}"), secrets=[SECRET_B])
vcase("rotation: verifier holds new and old, header signed with old", hdrs(sig=OTHER), secrets=[REF_SECRET, SECRET_B])
vcase("rotation: verifier holds new and old, neither matches", hdrs(sig=sign(SECRET_64, "msg_v", T, B)),
      secrets=[REF_SECRET, SECRET_B], ok=False, error="invalid_signature")
raw = bytes([0xff, 0x00, 0xc3, 0x28])
vcase("non-UTF-8 body", hdrs(sig=sign(REF_SECRET, "msg_v", T, raw)), body=raw)
vcase("empty body", hdrs(sig=sign(REF_SECRET, "msg_v", T, b"")), body=b"")
write("verify.json", "Verification cases: verify `body` (or `body_base64`) with `headers` against any of "
      "`secrets`, at Unix time `now`, with `tolerance` seconds (default 300). `ok` says whether it "
      "verifies; `error` is the stable error code otherwise.", verify_cases)

# ---------------------------------------------------------------- v1a (ed25519): keys.json, sign_v1a.json, verify_v1a.json
# The opt-in asymmetric extension. Signatures come from the `cryptography` package
# (OpenSSL's Ed25519), independently of ed25519-dalek under test; ed25519 is deterministic,
# so the files are stable. The seeds are fixed test keys, never used anywhere else.
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

L = 2**252 + 27742317777372353535851937790883648493   # the order of the ed25519 base point
SEED_A = bytes(range(32))
SEED_B = bytes(range(100, 132))
B64 = lambda b: base64.b64encode(b).decode()


def ed_public(seed):
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()


def whsk(seed):
    return "whsk_" + B64(seed)


def whpk(seed):
    return "whpk_" + B64(ed_public(seed))


def sign_v1a(seed, msg_id, ts, body: bytes):
    sig = Ed25519PrivateKey.from_private_bytes(seed).sign(f"{msg_id}.{ts}.".encode() + body)
    return "v1a," + B64(sig)


def openssl_accepts(seed_or_pub, msg: bytes, sig: bytes, raw_public=False):
    pub = Ed25519PublicKey.from_public_bytes(seed_or_pub if raw_public else ed_public(seed_or_pub))
    try:
        pub.verify(sig, msg)
        return True
    except InvalidSignature:
        return False


WHSK_A, WHPK_A, WHSK_B, WHPK_B = whsk(SEED_A), whpk(SEED_A), whsk(SEED_B), whpk(SEED_B)
WHSK_A_PAIR = "whsk_" + B64(SEED_A + ed_public(SEED_A))          # libsodium's 64-byte form
# Small-order points (compressed): the identity, and the point of order 2 (y = -1).
SMALL_ORDER = [bytes([1] + [0] * 31), bytes([0xec] + [0xff] * 30 + [0x7f])]

# ---- keys.json: parsing whsk_/whpk_ text
key_cases = []
def kcase(name, kind, text, public_key=None, error=None):
    c = {"name": name, "kind": kind, "text": text, "ok": error is None}
    if error is None:
        c["public_key"] = public_key
    else:
        c["error"] = error
    key_cases.append(c)

kcase("signing key (32-byte seed)", "signing", WHSK_A, WHPK_A)
kcase("signing key, libsodium 64-byte form (seed then public key)", "signing", WHSK_A_PAIR, WHPK_A)
kcase("signing key without the prefix", "signing", WHSK_A[5:], WHPK_A)
kcase("signing key with a trailing newline and no padding", "signing", WHSK_A.rstrip("=") + "\n", WHPK_A)
kcase("signing key with excess = padding", "signing", WHSK_A + "=", WHPK_A)
_a = WHSK_A.rstrip("=")
WHSK_A_SPARE = _a[:-1] + _ALPHABET[_ALPHABET.index(_a[-1]) | 0b11]   # the 2 spare bits set
assert WHSK_A_SPARE != _a and key(WHSK_A_SPARE[5:]) == SEED_A
kcase("unpadded signing key whose last character has non-zero spare bits", "signing", WHSK_A_SPARE, WHPK_A)
kcase("public key", "public", WHPK_A, WHPK_A)
kcase("public key without padding, with spaces around", "public", "  " + WHPK_B.rstrip("=") + " ", WHPK_B)
kcase("signing key of 31 bytes", "signing", "whsk_" + B64(SEED_A[:31]), error="invalid_secret")
kcase("signing key of 33 bytes", "signing", "whsk_" + B64(SEED_A + b"x"), error="invalid_secret")
kcase("64-byte signing key whose public half is another key's", "signing", "whsk_" + B64(SEED_A + ed_public(SEED_B)),
      error="invalid_secret")
kcase("signing key that is not base64", "signing", "whsk_not base64!", error="invalid_secret")
kcase("empty signing key", "signing", "whsk_", error="invalid_secret")
kcase("signing key with three = of padding", "signing", WHSK_A + "==", error="invalid_secret")
kcase("public key of 31 bytes", "public", "whpk_" + B64(ed_public(SEED_A)[:31]), error="invalid_public_key")
kcase("public key that is not base64", "public", "whpk_!!!!", error="invalid_public_key")
kcase("empty public key", "public", "whpk_", error="invalid_public_key")
kcase("public key that is not a curve point", "public", "whpk_" + B64(bytes([2] + [0] * 31)), error="invalid_public_key")
for i, p in enumerate(SMALL_ORDER):
    kcase(f"small-order public key {i + 1} (would verify forgeries)", "public", "whpk_" + B64(p), error="invalid_public_key")
kcase("a signing key where a verifying key belongs", "trusted", WHSK_A, error="invalid_public_key")
kcase("a whsec_ secret as a trusted key", "trusted", REF_SECRET, None)
kcase("a whpk_ public key as a trusted key", "trusted", WHPK_A, WHPK_A)
# the "not a point" case: y = 2 has no x on the curve, checked here against OpenSSL too.
try:
    Ed25519PublicKey.from_public_bytes(bytes([2] + [0] * 31)).verify(bytes(64), b"")
    raise AssertionError("OpenSSL verified with a non-point")
except (InvalidSignature, ValueError):
    pass
write("keys.json", "Key parsing (v1a, the opt-in ed25519 extension): `kind` says how `text` is read (`signing`: a whsk_ "
      "signing key; `public`: a whpk_ public key; `trusted`: a verifier's trust-list entry, whsec_ or whpk_, where whsk_ is "
      "refused). `ok`; `public_key` is the canonical whpk_ form (null for a whsec_ secret); `error` the stable code.",
      key_cases)

# ---- sign_v1a.json
sign_v1a_cases = []
def sacase(name, signing_key, seed, msg_id, ts, body: bytes):
    sign_v1a_cases.append({"name": name, "signing_key": signing_key, "public_key": whpk(seed), "id": msg_id,
                           "timestamp": ts, **body_fields(body), "signature": sign_v1a(seed, msg_id, ts, body)})

sacase("reference message", WHSK_A, SEED_A, REF_ID, REF_TS, REF_BODY.encode())
sacase("libsodium 64-byte signing key", WHSK_A_PAIR, SEED_A, REF_ID, REF_TS, REF_BODY.encode())
sacase("empty body", WHSK_B, SEED_B, "msg_empty", 1700000000, b"")
sacase("non-UTF-8 body", WHSK_A, SEED_A, "msg_bytes", 1700000000, bytes([0xff, 0xfe, 0x00, 0x80, 0x7b]))
sacase("unicode body", WHSK_B, SEED_B, "msg_unicode", 1700000001, '{"name":"Zoë 🚀 ünïcødé"}'.encode())
sacase("4 KiB body", WHSK_A, SEED_A, "msg_4k", 1700000003, (b'{"pad":"' + b"x" * 4085 + b'"}'))
write("sign_v1a.json", "Known-answer v1a signatures (ed25519, deterministic): `signature` is the `v1a,<base64>` entry "
      "for `signing_key`, whose public key is `public_key`. Computed by generate.py with Python's `cryptography`.",
      sign_v1a_cases)

# ---- verify_v1a.json
GOOD_A = sign_v1a(SEED_A, "msg_v", T, B)
GOOD_B = sign_v1a(SEED_B, "msg_v", T, B)
MSG = f"msg_v.{T}.".encode() + B
verify_v1a_cases = []
def vacase(name, headers, keys=(WHPK_A,), body=B, now=T, ok=True, error=None):
    c = {"name": name, "keys": list(keys), "headers": headers, **body_fields(body), "now": now, "ok": ok}
    if error:
        c["error"] = error
    verify_v1a_cases.append(c)

def high_s(entry):
    """The same signature with S + L: the same scalar mod L, which lax verifiers accept."""
    sig = bytearray(base64.b64decode(entry[4:]))
    s = int.from_bytes(sig[32:], "little") + L
    assert s < 2**256
    sig[32:] = s.to_bytes(32, "little")
    return bytes(sig)

NONCANON = high_s(GOOD_A)
FORGERY_SIG = bytes([1] + [0] * 31) + bytes(32)   # R = identity, S = 0: see below
assert not openssl_accepts(SEED_A, MSG, NONCANON), "OpenSSL rejects S >= L too"
assert openssl_accepts(SEED_A, MSG, base64.b64decode(GOOD_A[4:]))

vacase("valid v1a delivery", hdrs(sig=GOOD_A))
vacase("mixed header (v1 then v1a), verifier holds the public key", hdrs(sig=f"{GOOD} {GOOD_A}"))
vacase("mixed header (v1a then v1), verifier holds the public key", hdrs(sig=f"{GOOD_A} {GOOD}"))
vacase("mixed header, verifier holds only the v1 secret", hdrs(sig=f"{GOOD} {GOOD_A}"), keys=[REF_SECRET])
vacase("mixed header, wrong v1 but right v1a, verifier holds both kinds", hdrs(sig=f"{OTHER} {GOOD_A}"),
       keys=[REF_SECRET, WHPK_A])
vacase("mixed header, right v1 but wrong v1a, verifier holds both kinds", hdrs(sig=f"{GOOD} {GOOD_B}"),
       keys=[REF_SECRET, WHPK_A])
vacase("mixed header, neither matches, verifier holds both kinds", hdrs(sig=f"{OTHER} {GOOD_B}"),
       keys=[REF_SECRET, WHPK_A], ok=False, error="invalid_signature")
vacase("header names in any case", {"Webhook-Id": "msg_v", "WEBHOOK-TIMESTAMP": str(T), "Webhook-Signature": GOOD_A})
vacase("wrong key", hdrs(sig=GOOD_B), ok=False, error="invalid_signature")
vacase("rotation: verifier holds new and old public keys", hdrs(sig=GOOD_B), keys=[WHPK_A, WHPK_B])
vacase("rotation: header carries two v1a entries, the second matches", hdrs(sig=f"{GOOD_B} {GOOD_A}"))
vacase("tampered body (one byte)", hdrs(sig=GOOD_A), body=B.replace(b"hello", b"hellp"), ok=False,
       error="invalid_signature")
vacase("signature for another id", hdrs(msg_id="msg_w", sig=GOOD_A), ok=False, error="invalid_signature")
vacase("signature for another timestamp", hdrs(ts=T + 1, sig=GOOD_A), ok=False, error="invalid_signature")
vacase("tampered signature (one bit of R)", hdrs(sig="v1a," + B64(bytes([base64.b64decode(GOOD_A[4:])[0] ^ 1])
       + base64.b64decode(GOOD_A[4:])[1:])), ok=False, error="invalid_signature")
vacase("non-canonical signature (S + L) is refused", hdrs(sig="v1a," + B64(NONCANON)), ok=False,
       error="invalid_signature")
vacase("only a v1 entry, verifier holds only a public key", hdrs(sig=GOOD), ok=False, error="invalid_signature")
vacase("v1 entry carrying the ed25519 signature is not v1a", hdrs(sig="v1," + GOOD_A[4:]), ok=False,
       error="invalid_signature")
vacase("unknown versions are skipped", hdrs(sig=f"v2,{GOOD_A[4:]} v1b,{GOOD_A[4:]} {GOOD_A}"))
vacase("unpadded v1a signature is accepted", hdrs(sig=GOOD_A.rstrip("=")))
vacase("v1a,<sig>,extra is malformed and skipped", hdrs(sig=f"{GOOD_A},extra"), ok=False, error="invalid_signature")
vacase("v1a of 63 bytes is skipped", hdrs(sig="v1a," + B64(base64.b64decode(GOOD_A[4:])[:63])), ok=False,
       error="invalid_signature")
vacase("two header lines joined with \", \": the first still counts", hdrs(sig=f"{GOOD_A}, {GOOD_B}"))
vacase("301 s old fails before the signature is checked", hdrs(sig=GOOD_A), now=T + 301, ok=False,
       error="timestamp_too_old")
vacase("65 entries are too many", hdrs(sig=" ".join([GOOD_B] * 64 + [GOOD_A])), ok=False, error="invalid_header")
vacase("64 entries, last one good", hdrs(sig=" ".join([GOOD_B] * 63 + [GOOD_A])))
vacase("small-order public key in the trust list is refused", hdrs(sig="v1a," + B64(FORGERY_SIG)),
       keys=["whpk_" + B64(SMALL_ORDER[0])], ok=False, error="invalid_public_key")
vacase("a whsk_ signing key in the trust list is refused", hdrs(sig=GOOD_A), keys=[WHSK_A], ok=False,
       error="invalid_public_key")
raw = bytes([0xff, 0x00, 0xc3, 0x28])
vacase("non-UTF-8 body", hdrs(sig=sign_v1a(SEED_A, "msg_v", T, raw)), body=raw)
vacase("empty body", hdrs(sig=sign_v1a(SEED_A, "msg_v", T, b"")), body=b"")
# The forgery a small-order key allows: R = identity and S = 0 satisfy [S]B = R + [k]A for the
# identity key A and any message, and OpenSSL (a lax verifier for keys) accepts it. Refusing
# such keys when they are parsed is what keeps this out.
FORGERY = bytes([1] + [0] * 31) + bytes(32)
assert openssl_accepts(SMALL_ORDER[0], b"any message at all", FORGERY, raw_public=True)
write("verify_v1a.json", "v1a verification cases (the opt-in ed25519 extension): verify `body` (or `body_base64`) with "
      "`headers` against a verifier trusting `keys` (whpk_ public keys and whsec_ secrets alike), at Unix time `now`. "
      "`ok` says whether it verifies; `error` is the stable error code otherwise (`invalid_public_key` when the "
      "trust list itself is refused).", verify_v1a_cases)

# ---------------------------------------------------------------- events.json
def post(**extra):
    p = {"id": "post_1", "externalId": "ext-42", "group": "grp_1", "state": "QUEUE",
         "publishDate": "2026-11-22T10:00:00.000Z",
         "integration": {"id": "acc_1", "providerIdentifier": "linkedin", "name": "Acme on LinkedIn"},
         "releaseURL": None, "releaseId": None, "error": None}
    p.update(extra)
    return p

def env(t, data, **over):
    e = {"id": "msg_evt", "type": t, "createdAt": "2026-11-22T09:00:00.000Z", "workspaceId": "ws_1", "data": data}
    e.update(over)
    return json.dumps(e, ensure_ascii=False)

integ = {"id": "acc_1", "name": "Acme on X", "providerIdentifier": "x", "picture": None}

# ---------------------------------------------------------------- the catalogue (from the spec)
# (type, description from the spec's table, the `data` of a sample event)
EVENT_TYPES = [
    ("post.scheduled", "An approved post is queued, rescheduled, or edited.", {"post": post()}),
    ("post.unscheduled", "A queued post went back to draft or to awaiting approval.", {"post": post()}),
    ("post.publishing", "Publishing to the provider starts.", {"post": post(state="PUBLISHING")}),
    ("post.published", "The provider accepted the post.",
     {"post": post(state="PUBLISHED", releaseURL="https://www.linkedin.com/feed/update/1", releaseId="urn:li:share:1")}),
    ("post.failed", "The post could not be published.",
     {"post": post(state="ERROR", error="Rate limit reached"),
      "error": {"code": "rate_limited", "message": "Rate limit reached", "retryable": True}}),
    ("post.deleted", "The post was deleted.", {"post": post(), "deletedBy": {"kind": "api_token", "id": "tok_1"}}),
    ("integration.disconnected", "An account must be reconnected, or was disabled or deleted.",
     {"integration": integ, "reason": "reconnect_required"}),
    ("integration.reconnected", "An account that needed reconnecting works again.", {"integration": integ}),
    ("webhook.test", "A test event was sent.", {"message": "Hello from postwire"}),
]
# `data.error.code` on post.failed: the spec's list.
FAILURE_CODES = ["quota_exceeded", "integration_disconnected", "content_rejected", "media_invalid",
                 "rate_limited", "provider_error", "unknown"]
# `data.reason` on integration.disconnected: the spec names three cases; these are their codes.
DISCONNECT_REASONS = ["reconnect_required", "disabled", "deleted"]
# `data.deletedBy.kind` on post.deleted: the spec's createdByKind values, plus `system`.
ACTOR_KINDS = ["dashboard", "api_token", "oauth_client", "system"]
# A subscription's `createdByKind`: the spec's list.
CREATED_BY_KINDS = ["dashboard", "api_token", "oauth_client"]
# Post states the sender names; any other string is carried as it is.
POST_STATES = ["QUEUE", "PUBLISHING", "PUBLISHED", "ERROR"]

with open(os.path.join(HERE, "catalogue.json"), "w", encoding="utf-8") as f:
    json.dump({
        "description": "The event catalogue, transcribed from the spec by generate.py: every event type with "
                       "its description and a sample event, and the values of every enum the events carry. "
                       "Every other copy (postwire-core, the server's OpenAPI document, the npm package's "
                       "checks and types, the playground's samples) is tested against this file.",
        "eventTypes": [{"type": t, "description": d, "sample": json.loads(env(t, data))} for t, d, data in EVENT_TYPES],
        "failureCodes": FAILURE_CODES,
        "disconnectReasons": DISCONNECT_REASONS,
        "actorKinds": ACTOR_KINDS,
        "createdByKinds": CREATED_BY_KINDS,
        "postStates": POST_STATES,
    }, f, indent=2, ensure_ascii=False)
    f.write("\n")

event_cases = []
def ecase(name, body, ok=True, type_=None, error="invalid_payload"):
    c = {"name": name, "body": body, "ok": ok}
    if ok:
        c["type"] = type_
    else:
        c["error"] = error
    event_cases.append(c)

for t, _, data in EVENT_TYPES:
    ecase(t, env(t, data), type_=t)
# One valid case for every value of every enum, and one unknown value of each.
for code in FAILURE_CODES:
    ecase(f"failure code {code}", env("post.failed", {"post": post(state="ERROR", error="m"),
          "error": {"code": code, "message": "m", "retryable": code != "unknown"}}), type_="post.failed")
for reason in DISCONNECT_REASONS:
    ecase(f"disconnect reason {reason}", env("integration.disconnected", {"integration": integ, "reason": reason}),
          type_="integration.disconnected")
for kind in ACTOR_KINDS:
    ecase(f"actor kind {kind}", env("post.deleted", {"post": post(), "deletedBy": {"kind": kind, "id": "who_1"}}),
          type_="post.deleted")
for state in POST_STATES + ["DRAFT_SOMEDAY"]:
    ecase(f"post state {state}", env("post.scheduled", {"post": post(state=state)}), type_="post.scheduled")
ecase("unknown disconnect reason", env("integration.disconnected", {"integration": integ, "reason": "gone_fishing"}), ok=False)
ecase("unknown actor kind", env("post.deleted", {"post": post(), "deletedBy": {"kind": "robot", "id": "r_1"}}), ok=False)
ecase("unknown fields are ignored", env("post.scheduled", {"post": post(content="never carried", futureField=1), "extra": True}, newTopLevel="x"), type_="post.scheduled")
ecase("timestamps with an offset are accepted", env("webhook.test", {"message": "m"}, createdAt="2026-11-22T10:00:00+01:00"), type_="webhook.test")
ecase("failure with code unknown is not retryable", env("post.failed", {"post": post(state="ERROR"),
      "error": {"code": "unknown", "message": "?", "retryable": False}}), type_="post.failed")
ecase("failure with code unknown marked retryable", env("post.failed", {"post": post(state="ERROR"),
      "error": {"code": "unknown", "message": "?", "retryable": True}}), ok=False)
ecase("post.published without releaseURL", env("post.published", {"post": post(state="PUBLISHED", releaseId="1")}), ok=False)
ecase("unknown event type", env("post.exploded", {"post": post()}), ok=False)
ecase("unknown failure code", env("post.failed", {"post": post(), "error": {"code": "bad_luck", "message": "m", "retryable": False}}), ok=False)
ecase("data of the wrong shape", env("post.scheduled", {"message": "not a post"}), ok=False)
ecase("missing createdAt", json.dumps({"id": "msg_evt", "type": "webhook.test", "workspaceId": "ws_1", "data": {"message": "m"}}), ok=False)
ecase("createdAt is not a timestamp", env("webhook.test", {"message": "m"}, createdAt="yesterday"), ok=False)
ecase("id that cannot be a webhook-id", env("webhook.test", {"message": "m"}, id="has space"), ok=False)
ecase("not JSON", "this is not json", ok=False)
ecase("JSON but not an object", "[1,2,3]", ok=False)
ecase("empty body", "", ok=False)
write("events.json", "Envelope parse cases: `body` is a delivery body; `ok` says whether it is a valid event, "
      "`type` its type, `error` the code otherwise.", event_cases)

# ---------------------------------------------------------------- matching.json
match_cases = []
def mcase(name, events, ids, t, acc, m):
    match_cases.append({"name": name, "events": events, "integrationIds": ids, "eventType": t, "accountId": acc, "matches": m})

mcase("empty filters match everything", [], [], "post.published", "acc_1", True)
mcase("listed type matches", ["post.published", "post.failed"], [], "post.failed", "acc_1", True)
mcase("unlisted type does not match", ["post.published"], [], "post.failed", "acc_1", False)
mcase("listed account matches", [], ["acc_1", "acc_2"], "post.failed", "acc_2", True)
mcase("unlisted account does not match", [], ["acc_1"], "post.failed", "acc_9", False)
mcase("both must match", ["post.failed"], ["acc_1"], "post.published", "acc_1", False)
mcase("both match", ["post.failed"], ["acc_1"], "post.failed", "acc_1", True)
mcase("event with no account passes an account restriction", [], ["acc_1"], "webhook.test", None, True)
mcase("event with no account still needs its type", ["post.failed"], ["acc_1"], "webhook.test", None, False)
mcase("integration events match on their account", ["integration.disconnected"], ["acc_1"], "integration.disconnected", "acc_1", True)
write("matching.json", "Subscription matching: a subscription with `events` and `integrationIds` receives an event of "
      "`eventType` concerning `accountId` (null: none) exactly when `matches`.", match_cases)
print(f"wrote {len(sign_cases)} sign, {len(verify_cases)} verify, {len(key_cases)} key, "
      f"{len(sign_v1a_cases)} sign_v1a, {len(verify_v1a_cases)} verify_v1a, {len(event_cases)} event, {len(match_cases)} matching cases"
      f" and a catalogue of {len(EVENT_TYPES)} event types")
