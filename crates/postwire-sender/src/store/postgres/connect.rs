//! How postwire reaches PostgreSQL: the connection URL, and TLS.
//!
//! A `postgres://` URL is read as libpq reads it, with TLS chosen by `sslmode`:
//!
//! * absent, `disable`, `allow` or `prefer`: no TLS (a Unix socket, or a private
//!   network). postwire does not try TLS opportunistically: libpq's `prefer` encrypts
//!   without checking who answers, which protects against nobody who matters.
//! * `require`, `verify-ca` or `verify-full`: TLS, always with the server's certificate
//!   and host name verified (libpq's `verify-full`, whichever of the three is named).
//!   The certificate must chain to the system's trusted roots, or to the CA file given
//!   as `sslrootcert=/path/ca.pem` in the URL (a managed database's or a private CA).
//!
//! Every connection (the pool's, the wake-up listener's, the server's tables') is made
//! through a [`PgTarget`], so none of them can skip TLS.

use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig};
use tokio_postgres::Socket;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::SenderError;

/// A parsed connection URL and the TLS it asks for.
#[derive(Clone)]
pub struct PgTarget {
    config: tokio_postgres::Config,
    tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The config may hold a password: show neither it nor the URL.
        f.debug_struct("PgTarget")
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl PgTarget {
    /// Reads a `postgres://` (or `postgresql://`, or libpq key=value) connection
    /// string. An unreadable one, or an unreadable `sslrootcert` file, is
    /// `invalid_request` with a message that never repeats the password.
    pub fn parse(url: &str) -> Result<PgTarget, SenderError> {
        let (rest, mode, root_cert) = split_tls_options(url)?;
        let config: tokio_postgres::Config = rest
            .parse()
            .map_err(|e| SenderError::invalid(format!("not a PostgreSQL URL: {e}")))?;
        let tls = match mode.as_deref() {
            None | Some("disable" | "allow" | "prefer") => None,
            Some("require" | "verify-ca" | "verify-full") => Some(tls_connector(root_cert.as_deref())?),
            Some(other) => {
                return Err(SenderError::invalid(format!(
                    "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                )));
            }
        };
        Ok(PgTarget { config, tls })
    }

    /// The parsed configuration (host, user, database...).
    pub fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// Whether connections use TLS.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A connection pool manager for this target.
    pub fn manager(&self, manager_config: ManagerConfig) -> Manager {
        match &self.tls {
            Some(tls) => Manager::from_config(self.config.clone(), tls.clone(), manager_config),
            None => Manager::from_config(self.config.clone(), tokio_postgres::NoTls, manager_config),
        }
    }

    /// Connects one client outside any pool; `drive` runs its connection (e.g. to read
    /// notifications) and is handed the client. Returns when `drive` returns.
    pub async fn connect_and_drive<F, Fut>(&self, drive: F) -> Result<(), tokio_postgres::Error>
    where
        F: FnOnce(tokio_postgres::Client, Box<dyn ConnectionMessages>) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        match &self.tls {
            Some(tls) => {
                let (client, connection) = self.config.connect(tls.clone()).await?;
                drive(client, Box::new(connection)).await;
            }
            None => {
                let (client, connection) = self.config.connect(tokio_postgres::NoTls).await?;
                drive(client, Box::new(connection)).await;
            }
        }
        Ok(())
    }
}

/// A connection's stream of messages (notifications), whatever its TLS.
pub trait ConnectionMessages: Send + Unpin {
    /// Polls the next message; `None` when the connection ended.
    fn poll_message(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<tokio_postgres::AsyncMessage, tokio_postgres::Error>>>;
}

impl<T> ConnectionMessages for tokio_postgres::Connection<Socket, T>
where
    T: tokio_postgres::tls::TlsStream + Unpin + Send,
{
    fn poll_message(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<tokio_postgres::AsyncMessage, tokio_postgres::Error>>> {
        tokio_postgres::Connection::poll_message(self, cx)
    }
}

/// Takes `sslmode` and `sslrootcert` out of a URL's query (tokio-postgres knows no
/// `sslrootcert` and not every `sslmode`), leaving the rest for tokio-postgres.
fn split_tls_options(url: &str) -> Result<(String, Option<String>, Option<String>), SenderError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        // The key=value form: tokio-postgres reads its own sslmode (disable, prefer,
        // require); a key it does not know is its error.
        let mode = url
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("sslmode="))
            .map(str::to_owned);
        let rest: Vec<&str> = url
            .split_whitespace()
            .filter(|kv| !kv.starts_with("sslmode="))
            .collect();
        return Ok((rest.join(" "), mode, None));
    }
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None, None));
    };
    let (mut mode, mut root_cert, mut kept) = (None, None, Vec::new());
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*key {
            "sslmode" => mode = Some(value.into_owned()),
            "sslrootcert" => root_cert = Some(value.into_owned()),
            _ => kept.push((key.into_owned(), value.into_owned())),
        }
    }
    if kept.is_empty() {
        return Ok((base.to_owned(), mode, root_cert));
    }
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(kept)
        .finish();
    Ok((format!("{base}?{query}"), mode, root_cert))
}

/// A rustls connector that verifies the server against `root_cert` (a PEM file of CA
/// certificates) or, without one, the system's trusted roots.
fn tls_connector(root_cert: Option<&str>) -> Result<MakeRustlsConnect, SenderError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| SenderError::storage(format!("TLS to PostgreSQL: {e}")))?;
    let config = match root_cert {
        Some(path) => {
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject as _;
            let mut roots = rustls::RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| SenderError::invalid(format!("sslrootcert {path}: {e}")))?;
            for cert in certs {
                let cert = cert.map_err(|e| SenderError::invalid(format!("sslrootcert {path}: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| SenderError::invalid(format!("sslrootcert {path}: {e}")))?;
            }
            if roots.is_empty() {
                return Err(SenderError::invalid(format!(
                    "sslrootcert {path}: no certificate in it"
                )));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => {
            use rustls_platform_verifier::BuilderVerifierExt as _;
            builder
                .with_platform_verifier()
                .map_err(|e| SenderError::storage(format!("TLS to PostgreSQL: the system's roots: {e}")))?
                .with_no_client_auth()
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

// `MakeRustlsConnect` must fit what deadpool and `Config::connect` ask of a connector.
const _: fn() = || {
    fn connector<T>()
    where
        T: MakeTlsConnect<Socket> + Clone + Sync + Send + 'static,
        T::Stream: Sync + Send,
        T::TlsConnect: Sync + Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
    }
    connector::<MakeRustlsConnect>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_are_taken_out_and_the_rest_kept() {
        let (rest, mode, root) = split_tls_options(
            "postgres://u:p@db.example/x?sslmode=verify-full&sslrootcert=%2Fca.pem&application_name=pw",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p@db.example/x?application_name=pw");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/ca.pem"));
        let (rest, mode, _) = split_tls_options("postgres://u@h/x").unwrap();
        assert_eq!((rest.as_str(), mode), ("postgres://u@h/x", None));
    }

    #[test]
    fn modes_choose_tls_and_a_bad_one_or_a_missing_ca_is_refused() {
        assert!(!PgTarget::parse("postgres://u@h/x").unwrap().uses_tls());
        assert!(!PgTarget::parse("postgres://u@h/x?sslmode=prefer").unwrap().uses_tls());
        assert!(PgTarget::parse("postgres://u@h/x?sslmode=require").unwrap().uses_tls());
        let e = PgTarget::parse("postgres://u:hunter2@h/x?sslmode=sometimes").unwrap_err();
        assert!(e.to_string().contains("sslmode=sometimes") && !e.to_string().contains("hunter2"));
        let e = PgTarget::parse("postgres://u@h/x?sslmode=require&sslrootcert=/nonexistent/ca.pem").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }
}
