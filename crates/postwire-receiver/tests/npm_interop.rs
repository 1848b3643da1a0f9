//! A Rust receiver and a Node one (the npm package's `postwire/stores/redis` and
//! `postwire/stores/postgres`, run by `node` from their sources over the shared
//! `protocol/` files) on one store see each other's claims, renewals and done marks.
//!
//! Needs `node` and the repository's root `node_modules` (`npm ci`: the `redis` and `pg`
//! clients). Where they are missing the tests say so and pass without running, except
//! under `CI=true` (CI's `postgres` part), where they fail: CI must run them.
#![cfg(all(feature = "redis", feature = "postgres"))]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use postwire_receiver::{Claim, ClaimToken, PostgresStore, RedisStore, Store};
use serde_json::{Value, json};

const LONG: Duration = Duration::from_secs(60);

/// Whether `node` and the root `node_modules` (with `redis` and `pg`) are here. Missing:
/// `false` with a note on stderr, or a failure under `CI=true`.
fn node_is_here() -> bool {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let modules = ["redis", "pg"]
        .iter()
        .all(|m| root.join("node_modules").join(m).join("package.json").is_file());
    if node && modules {
        return true;
    }
    let missing = if node {
        "the root node_modules (run `npm ci` at the repository's root)"
    } else {
        "node"
    };
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true and {missing} is missing: the cross-language store test must run in CI"
    );
    eprintln!("npm_interop: {missing} is missing; this test did not run");
    false
}

/// The npm store's answer to `op(id, token)`.
fn node(kind: &str, target: &str, op: &str, id: &str, token: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npm_interop.mjs");
    let out = Command::new("node")
        .arg(script)
        .args([kind, target, op, id, token])
        .output()
        .expect("node is needed for this test (the npm part's toolchain)");
    assert!(
        out.status.success(),
        "node failed (run `npm ci` at the repository's root): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn both_ways<S: Store>(store: S, kind: &str, target: &str) {
    let rust = ClaimToken::generate();
    // A Rust claim is busy for Node; once done in Rust, done for Node.
    assert_eq!(store.claim("msg_i1", &rust, LONG).await.unwrap(), Claim::Claimed);
    assert_eq!(node(kind, target, "claim", "msg_i1", "nodetoken1")["state"], "busy");
    assert!(store.complete("msg_i1", &rust, LONG).await.unwrap());
    assert_eq!(
        node(kind, target, "claim", "msg_i1", "nodetoken1"),
        json!({ "state": "done" })
    );

    // A Node claim is in flight for Rust; once done in Node, done for Rust.
    assert_eq!(
        node(kind, target, "claim", "msg_i2", "nodetoken2"),
        json!({ "state": "claimed" })
    );
    assert!(matches!(
        store.claim("msg_i2", &rust, LONG).await.unwrap(),
        Claim::InFlight { .. }
    ));
    assert_eq!(node(kind, target, "complete", "msg_i2", "nodetoken2"), json!(true));
    assert_eq!(store.claim("msg_i2", &rust, LONG).await.unwrap(), Claim::Done);

    // Tokens are written alike: Rust releases a Node claim by its token, and back.
    assert_eq!(
        node(kind, target, "claim", "msg_i3", "nodetoken3"),
        json!({ "state": "claimed" })
    );
    let theirs = ClaimToken::from_string("nodetoken3".into());
    assert!(store.release("msg_i3", &theirs).await.unwrap());
    assert_eq!(store.claim("msg_i3", &rust, LONG).await.unwrap(), Claim::Claimed);
    assert_eq!(node(kind, target, "release", "msg_i3", rust.as_str()), json!(true));
    assert_eq!(
        node(kind, target, "claim", "msg_i3", "nodetoken4"),
        json!({ "state": "claimed" })
    );

    // Renewals: only the holder's, across languages.
    assert_eq!(node(kind, target, "renew", "msg_i3", "nodetoken4"), json!(true));
    assert!(!store.renew("msg_i3", &rust, LONG).await.unwrap(), "Node holds it");
    assert!(
        store
            .renew("msg_i3", &ClaimToken::from_string("nodetoken4".into()), LONG)
            .await
            .unwrap()
    );
    assert_eq!(store.claim("msg_i4", &rust, LONG).await.unwrap(), Claim::Claimed);
    assert_eq!(node(kind, target, "renew", "msg_i4", "nodetoken5"), json!(false));
    assert_eq!(node(kind, target, "renew", "msg_i4", rust.as_str()), json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_claims_are_shared_with_the_npm_store() {
    if !node_is_here() {
        return;
    }
    let server = common::RedisServer::start();
    let store = RedisStore::new(common::redis_manager(&server.url()).await);
    both_ways(store, "redis", &server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_claims_are_shared_with_the_npm_store() {
    if !node_is_here() {
        return;
    }
    let db = postwire_testpg::database();
    let config: tokio_postgres::Config = db.url().parse().unwrap();
    let socket_dir = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        other => panic!("the test cluster listens on a socket, not {other:?}"),
    };
    let target = json!({
        "host": socket_dir,
        "port": config.get_ports()[0],
        "user": "postgres",
        "database": config.get_dbname().unwrap(),
    })
    .to_string();
    let store = PostgresStore::new(common::pg_pool(db.url()));
    both_ways(store, "postgres", &target).await;
}
