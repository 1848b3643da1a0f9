//! `v1a` (ed25519, the opt-in extension) beside `v1` (HMAC-SHA256): sign and verify one
//! delivery at 1 KiB and 64 KiB with postwire-core, through the same public API
//! (`Signer`, `Verifier::verify` on an `http::HeaderMap`), plus the header `"both"` gives
//! (a `v1` and a `v1a` entry) so the cost of signing both is visible.
//!
//! Run: `cargo bench -p postwire-bench --bench v1a`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue};
use postwire_core::{Secret, Signer, SigningKey, UnixTime, Verifier};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SIZES: [(usize, &str); 2] = [(1024, "1KiB"), (64 * 1024, "64KiB")];
const NOW: UnixTime = UnixTime::from_secs(1_700_000_000);

fn body(len: usize) -> Vec<u8> {
    let mut b = br#"{"type":"post.published","data":{"pad":""#.to_vec();
    b.resize(len - 3, b'x');
    b.extend_from_slice(b"\"}}");
    b
}

fn headers(sig: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("webhook-id", HeaderValue::from_static(ID));
    h.insert("webhook-timestamp", HeaderValue::from_static("1700000000"));
    h.insert("webhook-signature", HeaderValue::from_str(sig).unwrap());
    h
}

fn sign(c: &mut Criterion) {
    let secret = Secret::parse(SECRET).unwrap();
    let key = SigningKey::from_seed(&[7; 32]);
    let v1 = Signer::new(secret.clone());
    let v1a = Signer::with_keys([], [key.clone()]).unwrap();
    let both = Signer::with_keys([secret], [key]).unwrap();
    for (len, label) in SIZES {
        let mut g = c.benchmark_group(format!("sign/{label}"));
        g.throughput(Throughput::Bytes(len as u64));
        let body = body(len);
        for (name, signer) in [("v1", &v1), ("v1a", &v1a), ("v1+v1a", &both)] {
            g.bench_function(BenchmarkId::new(name, label), |b| {
                b.iter(|| signer.sign(ID, NOW, std::hint::black_box(&body)).unwrap())
            });
        }
        g.finish();
    }
}

fn verify(c: &mut Criterion) {
    let secret = Secret::parse(SECRET).unwrap();
    let key = SigningKey::from_seed(&[7; 32]);
    let by_secret = Verifier::new(secret.clone());
    let by_public_key = Verifier::from_public_key(key.public_key());
    let both = Signer::with_keys([secret], [key]).unwrap();
    for (len, label) in SIZES {
        let mut g = c.benchmark_group(format!("verify/{label}"));
        g.throughput(Throughput::Bytes(len as u64));
        let body = body(len);
        let h = headers(both.sign(ID, NOW, &body).unwrap().as_str());
        g.bench_function(BenchmarkId::new("v1", label), |b| {
            b.iter(|| by_secret.verify(&h, std::hint::black_box(&body), NOW).unwrap())
        });
        g.bench_function(BenchmarkId::new("v1a", label), |b| {
            b.iter(|| by_public_key.verify(&h, std::hint::black_box(&body), NOW).unwrap())
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = sign, verify
}
criterion_main!(benches);
