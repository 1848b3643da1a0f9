//! TLS to PostgreSQL, against a real cluster that serves TLS on loopback with a
//! certificate for `localhost` from a CA made here: `sslmode=require` with that CA as
//! `sslrootcert` connects encrypted (PostgreSQL's own `pg_stat_ssl` says so), and the
//! sender works through it; without the CA, or under a host name the certificate does
//! not name, the connection is refused: the certificate is always verified.

use std::sync::Arc;

use postwire_core::SystemClock;
use postwire_sender::store::postgres::PgTarget;
use postwire_sender::{Sender, SenderConfig, Workspace};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// A CA, and a server certificate for `localhost` it signed.
fn certificates() -> (String, postwire_testpg::ServerCert) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (
        ca_cert.pem(),
        postwire_testpg::ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        },
    )
}

async fn encrypted(target: &PgTarget) -> Result<bool, String> {
    let pool = deadpool_postgres::Pool::builder(target.manager(deadpool_postgres::ManagerConfig::default()))
        .max_size(1)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .unwrap();
    let client = pool.get().await.map_err(|e| format!("{e:?}"))?;
    let row = client
        .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
        .await
        .map_err(|e| e.to_string())?;
    Ok(row.get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_verifies_the_server_and_the_sender_works_over_tls() {
    let (ca_pem, server_cert) = certificates();
    let cluster = postwire_testpg::Cluster::start_tls(&server_cert).unwrap();
    cluster.create_database("tls").unwrap();
    let port = cluster.tcp_port().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let ca = ca_file.to_str().unwrap();
    let url = |host: &str, query: &str| format!("postgres://postgres@{host}:{port}/tls{query}");

    // Verified against the CA: encrypted.
    let verified = PgTarget::parse(&url("localhost", &format!("?sslmode=require&sslrootcert={ca}"))).unwrap();
    assert_eq!(encrypted(&verified).await, Ok(true));
    // The same server without TLS asked for: plain (the default, as before).
    let plain = PgTarget::parse(&url("localhost", "")).unwrap();
    assert_eq!(encrypted(&plain).await, Ok(false));
    // The system's roots do not know this CA: refused.
    let unknown = PgTarget::parse(&url("localhost", "?sslmode=require")).unwrap();
    let refused = encrypted(&unknown).await.unwrap_err();
    assert!(refused.to_lowercase().contains("certificate"), "{refused}");
    // The certificate names `localhost`, not 127.0.0.1: refused.
    let wrong_name = PgTarget::parse(&url("127.0.0.1", &format!("?sslmode=verify-full&sslrootcert={ca}"))).unwrap();
    let refused = encrypted(&wrong_name).await.unwrap_err();
    assert!(refused.to_lowercase().contains("certificate"), "{refused}");

    // The sender itself (pool and wake-up listener) over TLS.
    let sender = Sender::open_postgres(
        &url("localhost", &format!("?sslmode=require&sslrootcert={ca}")),
        SenderConfig::default(),
        Arc::new(SystemClock),
    )
    .await
    .unwrap();
    sender
        .upsert_workspace(Workspace {
            id: "ws_tls".into(),
            name: "TLS".into(),
        })
        .await
        .unwrap();
    assert!(sender.workspace("ws_tls").await.unwrap().is_some());
}
