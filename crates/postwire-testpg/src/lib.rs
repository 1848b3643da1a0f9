//! Throwaway PostgreSQL clusters for postwire's tests.
//!
//! The project tests against real PostgreSQL, never a mock, and never against a system
//! database: each cluster is made by `initdb` in a temporary directory, listens only on
//! a Unix socket in that directory, and is stopped and removed afterwards. Two shapes:
//!
//! * [`Cluster`]: a cluster of one's own (for tests that restart PostgreSQL, or run
//!   several processes against it); stopped and removed on drop.
//! * [`database`]: a fresh, empty database in one cluster shared by the whole test
//!   process (initdb costs seconds; a database costs a fraction of one).
//!
//! A watchdog process stops each cluster and removes its directory when the test process
//! ends, however it ends (a panic that aborts, SIGKILL), so no server is left running.
//!
//! The PostgreSQL binaries come from Debian's `postgresql` package (`scripts/setup.sh`
//! installs it). When they are missing, [`Cluster::start`] fails with a message that says
//! so, and [`database`] panics with it: a test that needs PostgreSQL never passes
//! silently without it.
//!
//! `initdb` refuses to run as root; as root, every server command runs as the `postgres`
//! user the package creates (`runuser -u postgres`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The port number in the socket's name (`.s.PGSQL.<port>`); nothing listens on TCP
/// (except a [`Cluster::start_tls`] cluster, on a free loopback port).
const PORT: u16 = 5432;

/// A running throwaway cluster, stopped and removed on drop.
#[derive(Debug)]
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
    /// The port of the socket, and of the TCP listener of a TLS cluster.
    port: u16,
    /// Whether it also listens on TCP at 127.0.0.1 (TLS clusters).
    tcp: bool,
}

/// A server certificate and its private key, PEM-encoded, for [`Cluster::start_tls`].
#[derive(Debug, Clone)]
pub struct ServerCert {
    /// The certificate chain (server certificate first).
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

/// Where the PostgreSQL server binaries are: `initdb` on `PATH`, else the newest
/// `/usr/lib/postgresql/<version>/bin`.
fn find_binaries() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Ok(std::fs::canonicalize(dir.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or(dir));
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "PostgreSQL is not installed (no `initdb` on PATH nor in /usr/lib/postgresql/*/bin): \
         run scripts/setup.sh, or `apt-get install postgresql`; the tests that need a \
         real PostgreSQL cannot run without it"
            .to_string()
    })
}

fn is_root() -> bool {
    // The effective uid, without a libc dependency: /proc/self/status's `Uid:` line.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

impl Cluster {
    /// Initialises and starts a new cluster (a few seconds on a busy machine).
    pub fn start() -> Result<Cluster, String> {
        Cluster::start_with(None, "")
    }

    /// A cluster with extra lines for its `postgresql.auto.conf` (a benchmark's
    /// `shared_preload_libraries = 'pg_stat_statements'`, say).
    pub fn start_with_conf(extra: &str) -> Result<Cluster, String> {
        Cluster::start_with(None, extra)
    }

    /// A cluster that also listens on TCP at 127.0.0.1 (see [`Cluster::tcp_port`]) and
    /// accepts TLS there with `cert` (`ssl = on`); plain connections are still allowed.
    pub fn start_tls(cert: &ServerCert) -> Result<Cluster, String> {
        Cluster::start_with(Some(cert), "")
    }

    fn start_with(cert: Option<&ServerCert>, extra_conf: &str) -> Result<Cluster, String> {
        let bin = find_binaries()?;
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("postwire-pg-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        if as_postgres {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
            run(Command::new("chown").arg("postgres").arg(dir.path()))?;
        }
        let (port, tcp) = match cert {
            Some(_) => (free_port()?, true),
            None => (PORT, false),
        };
        let cluster = Cluster {
            dir,
            bin,
            as_postgres,
            port,
            tcp,
        };
        cluster.watch_parent()?;
        let data = cluster.data_dir();
        cluster.server_command("initdb", |c| {
            c.arg("-D")
                .arg(&data)
                .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        })?;
        // Small and quick: tests need no durability across a power cut.
        let mut conf =
            String::from("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n");
        if let Some(cert) = cert {
            use std::os::unix::fs::PermissionsExt;
            let (cert_file, key_file) = (data.join("server.crt"), data.join("server.key"));
            std::fs::write(&cert_file, &cert.cert_pem).map_err(|e| e.to_string())?;
            std::fs::write(&key_file, &cert.key_pem).map_err(|e| e.to_string())?;
            // PostgreSQL refuses a key readable by others.
            std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
            if cluster.as_postgres {
                run(Command::new("chown").arg("postgres").arg(&cert_file).arg(&key_file))?;
            }
            conf.push_str("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
            // TCP clients authenticate as the socket's do (trust): a throwaway cluster.
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhost all all 127.0.0.1/32 trust\n",
            )
            .map_err(|e| e.to_string())?;
        }
        conf.push_str(extra_conf);
        std::fs::write(data.join("postgresql.auto.conf"), conf).map_err(|e| e.to_string())?;
        cluster.start_server()?;
        Ok(cluster)
    }

    /// The cluster's data directory (for tests that look at the files PostgreSQL wrote).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory of the socket (and of the cluster).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// A connection URL for database `db` as the `postgres` superuser, over the socket.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://postgres@{}:{}/{db}",
            percent_encode(&self.dir.path().to_string_lossy()),
            self.port
        )
    }

    /// The TCP port on 127.0.0.1 of a [`Cluster::start_tls`] cluster (`None` for a
    /// socket-only one).
    pub fn tcp_port(&self) -> Option<u16> {
        self.tcp.then_some(self.port)
    }

    /// Creates an empty database named `name`.
    pub fn create_database(&self, name: &str) -> Result<(), String> {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""))
    }

    /// Runs `sql` in database `db` with `psql`.
    pub fn psql(&self, db: &str, sql: &str) -> Result<(), String> {
        run(Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-p"])
            .arg(self.port.to_string())
            .arg("-h")
            .arg(self.dir.path())
            .args(["-d", db, "-c", sql]))
    }

    /// Stops the server (fast shutdown: connections are cut, as in a crash of the
    /// network or a restart).
    pub fn stop_server(&self) -> Result<(), String> {
        let data = self.data_dir();
        self.server_command("pg_ctl", |c| c.arg("-D").arg(&data).args(["-m", "fast", "-w", "stop"]))
    }

    /// Starts the server again (after [`stop_server`](Self::stop_server)).
    pub fn start_server(&self) -> Result<(), String> {
        let data = self.data_dir();
        let log = self.dir.path().join("log");
        let listen = if self.tcp { "127.0.0.1" } else { "" };
        let options = format!(
            "-k {} -p {} -c listen_addresses='{listen}'",
            self.dir.path().display(),
            self.port
        );
        self.server_command("pg_ctl", |c| {
            c.arg("-D")
                .arg(&data)
                .arg("-o")
                .arg(&options)
                .arg("-l")
                .arg(&log)
                .args(["-w", "start"])
        })
    }

    fn server_command(&self, tool: &str, args: impl FnOnce(&mut Command) -> &mut Command) -> Result<(), String> {
        let program = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        run(args(&mut cmd))
    }

    /// Starts a watchdog that stops the server and removes the directory once this
    /// process has ended, whatever ended it.
    fn watch_parent(&self) -> Result<(), String> {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             {stop} '{bin}/pg_ctl' -D '{data}' -m immediate stop >/dev/null 2>&1; rm -rf '{dir}'",
            pid = std::process::id(),
            stop = if self.as_postgres { "runuser -u postgres --" } else { "" },
            bin = self.bin.display(),
            data = self.data_dir().display(),
            dir = self.dir.path().display(),
        );
        Command::new("setsid")
            .args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| format!("starting the cluster's watchdog: {e}"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data_dir();
        let _ = self.server_command("pg_ctl", |c| {
            c.arg("-D").arg(&data).args(["-m", "immediate", "-w", "stop"])
        });
        // The TempDir removes the directory.
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

/// Percent-encodes a socket directory for the host part of a URL.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A fresh database in the test process's shared cluster.
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
}

impl TestDatabase {
    /// Its connection URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();
static NEXT_DB: AtomicU64 = AtomicU64::new(1);

/// The test process's shared cluster, started on first use.
pub fn shared_cluster() -> &'static Cluster {
    match SHARED.get_or_init(Cluster::start) {
        Ok(c) => c,
        Err(e) => panic!("cannot start a throwaway PostgreSQL for this test: {e}"),
    }
}

/// A new empty database in the shared cluster. Panics (failing the test) when
/// PostgreSQL is not installed or will not start.
pub fn database() -> TestDatabase {
    let cluster = shared_cluster();
    let name = format!("t{}", NEXT_DB.fetch_add(1, Ordering::Relaxed));
    if let Err(e) = cluster.create_database(&name) {
        panic!("creating a test database: {e}");
    }
    TestDatabase {
        url: cluster.url(&name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_starts_serves_and_is_removed_on_drop() {
        let cluster = Cluster::start().unwrap();
        let dir = cluster.socket_dir().to_path_buf();
        cluster.create_database("x").unwrap();
        cluster
            .psql("x", "CREATE TABLE t (a int); INSERT INTO t VALUES (1);")
            .unwrap();
        assert!(cluster.url("x").starts_with("postgres://postgres@%2F"));
        assert!(cluster.psql("x", "SELECT nope").is_err(), "errors are reported");
        drop(cluster);
        assert!(!dir.exists(), "the cluster's directory is removed");
    }
}
