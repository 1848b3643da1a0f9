//! Verify and sign at 256 B, 1 KiB, 64 KiB and 1 MiB: postwire-core against the
//! `standardwebhooks` and `svix` crates in the same run, with raw HMAC-SHA256 over the
//! same bytes (`hmac` + `sha2`) as the ceiling no verifier can beat.
//!
//! Run: `cargo bench -p postwire-bench --bench verify`
//! All three verifiers get the same `http::HeaderMap` and the same body, signed with a
//! current timestamp (the peers read the system clock themselves).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderValue};
use postwire_core::{Clock, Secret, Signer, SystemClock, UnixTime, Verifier};
use sha2::Sha256;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SIZES: [(usize, &str); 4] = [
    (256, "256B"),
    (1024, "1KiB"),
    (64 * 1024, "64KiB"),
    (1024 * 1024, "1MiB"),
];

fn body(len: usize) -> Vec<u8> {
    // ASCII JSON-ish text: the peers require UTF-8 payloads.
    let mut b = br#"{"type":"post.published","data":{"pad":""#.to_vec();
    b.resize(len - 3, b'x');
    b.extend_from_slice(b"\"}}");
    b
}

fn headers(ts: UnixTime, sig: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("webhook-id", HeaderValue::from_static(ID));
    h.insert("webhook-timestamp", HeaderValue::from_str(&ts.to_string()).unwrap());
    h.insert("webhook-signature", HeaderValue::from_str(sig).unwrap());
    h
}

fn raw_hmac(key: &[u8], ts: &str, body: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(ID.as_bytes());
    mac.update(b".");
    mac.update(ts.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

fn verify(c: &mut Criterion) {
    let secret = Secret::parse(SECRET).unwrap();
    let ours = Verifier::new(secret.clone());
    let sw = standardwebhooks::Webhook::new(SECRET).unwrap();
    let svix = svix::webhooks::Webhook::new(SECRET).unwrap();
    let key = secret.expose_bytes().to_vec();

    for (len, label) in SIZES {
        let mut g = c.benchmark_group(format!("verify/{label}"));
        g.throughput(Throughput::Bytes(len as u64));
        let body = body(len);
        // Signed now, per group, so the peers' own clock checks pass during the group.
        let now = SystemClock.now().unix_time();
        let sig = Signer::new(secret.clone()).sign(ID, now, &body).unwrap();
        let h = headers(now, sig.as_str());
        assert!(ours.verify(&h, &body, now).is_ok());
        assert!(sw.verify(&body, &h).is_ok());
        assert!(svix.verify(&body, &h).is_ok());
        let ts = now.to_string();

        g.bench_function(BenchmarkId::new("postwire", label), |b| {
            b.iter(|| {
                ours.verify(&h, std::hint::black_box(&body), SystemClock.now().unix_time())
                    .is_ok()
            })
        });
        g.bench_function(BenchmarkId::new("standardwebhooks", label), |b| {
            b.iter(|| sw.verify(std::hint::black_box(&body), &h).is_ok())
        });
        g.bench_function(BenchmarkId::new("svix", label), |b| {
            b.iter(|| svix.verify(std::hint::black_box(&body), &h).is_ok())
        });
        g.bench_function(BenchmarkId::new("raw-hmac-sha256", label), |b| {
            b.iter(|| raw_hmac(&key, &ts, std::hint::black_box(&body)))
        });
        g.finish();
    }
}

fn sign(c: &mut Criterion) {
    let secret = Secret::parse(SECRET).unwrap();
    let ours = Signer::new(secret.clone());
    let sw = standardwebhooks::Webhook::new(SECRET).unwrap();
    let svix = svix::webhooks::Webhook::new(SECRET).unwrap();
    let key = secret.expose_bytes().to_vec();
    let ts = UnixTime::from_secs(1_700_000_000);

    for (len, label) in SIZES {
        let mut g = c.benchmark_group(format!("sign/{label}"));
        g.throughput(Throughput::Bytes(len as u64));
        let body = body(len);
        let expected = ours.sign(ID, ts, &body).unwrap();
        assert_eq!(sw.sign(ID, ts.as_secs(), &body).unwrap(), expected.as_str());
        assert_eq!(svix.sign(ID, ts.as_secs(), &body).unwrap(), expected.as_str());

        g.bench_function(BenchmarkId::new("postwire", label), |b| {
            b.iter(|| ours.sign(ID, ts, std::hint::black_box(&body)).unwrap())
        });
        g.bench_function(BenchmarkId::new("standardwebhooks", label), |b| {
            b.iter(|| sw.sign(ID, ts.as_secs(), std::hint::black_box(&body)).unwrap())
        });
        g.bench_function(BenchmarkId::new("svix", label), |b| {
            b.iter(|| svix.sign(ID, ts.as_secs(), std::hint::black_box(&body)).unwrap())
        });
        g.bench_function(BenchmarkId::new("raw-hmac-sha256", label), |b| {
            b.iter(|| raw_hmac(&key, "1700000000", std::hint::black_box(&body)))
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = verify, sign
}
criterion_main!(benches);
