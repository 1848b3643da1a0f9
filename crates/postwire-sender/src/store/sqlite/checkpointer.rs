//! Checkpoints on a thread of their own, so the connection thread never stalls for one.
//!
//! In WAL mode every commit appends pages to the log; a *checkpoint* copies them back
//! into the database file. SQLite's automatic checkpoint runs on the connection that
//! committed, right after the commit that crossed the threshold: with the store's
//! 10,000-page threshold that is tens of milliseconds in which the connection thread
//! serves no claim, publish or outcome, and the whole dispatcher waits (the bench saw the
//! machine's use drop by a third every half second under load).
//!
//! So the connection thread only nudges this thread every [`COMMITS_PER_NUDGE`] commits,
//! and this thread runs a `PASSIVE` checkpoint on its own connection, which copies the
//! committed pages while the connection thread goes on committing. When a checkpoint
//! finishes between two commits, the next commit starts the log over from its beginning.
//! Under unbroken load that may not happen for a while; the connection thread's automatic
//! checkpoint stays on as the bound on the log's size, and by then finds almost nothing
//! left to copy.
//!
//! Durability does not depend on this thread: a committed transaction is safe in the log
//! whether or not it has been copied yet.

use std::path::Path;
use std::sync::mpsc;

use rusqlite::{Connection, OpenFlags};

use super::super::StoreResult;
use crate::error::SenderError;

/// Commits between two nudges.
pub(super) const COMMITS_PER_NUDGE: u64 = 32;

/// A handle to the checkpoint thread; the thread ends when the handle is dropped.
pub(super) struct Checkpointer {
    nudges: mpsc::SyncSender<()>,
}

impl Checkpointer {
    /// Opens a second connection to the (existing, WAL-mode) file at `path`, with the
    /// same `synchronous` setting as the store's, and starts the thread.
    pub(super) fn spawn(path: &Path, synchronous: &str) -> StoreResult<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(SenderError::storage)?;
        conn.execute_batch(&format!(
            "PRAGMA synchronous={synchronous}; PRAGMA wal_autocheckpoint=0;"
        ))
        .map_err(SenderError::storage)?;
        // One nudge waiting is enough: a checkpoint copies everything committed before it.
        let (nudges, rx) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("postwire-checkpoint".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                        tracing::warn!(error = %e, "background checkpoint failed; the next one will retry");
                    }
                }
            })
            .map_err(|e| SenderError::storage(format!("could not start the checkpoint thread: {e}")))?;
        Ok(Checkpointer { nudges })
    }

    /// Asks for a checkpoint, without waiting; a no-op if one is already asked for.
    pub(super) fn nudge(&self) {
        let _ = self.nudges.try_send(());
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::connection_thread::ConnectionThread;
    use super::*;

    /// With the connection's own automatic checkpoint off, committed pages reach the
    /// database file only through the checkpoint thread.
    #[tokio::test]
    async fn committed_pages_reach_the_database_file_without_the_connections_own_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t (id INTEGER PRIMARY KEY, pad TEXT)",
        )
        .unwrap();
        let file_len = || std::fs::metadata(&path).unwrap().len();
        let before = file_len();
        let thread =
            ConnectionThread::spawn(conn, "test", Some(Checkpointer::spawn(&path, "NORMAL").unwrap())).unwrap();
        for id in 0..COMMITS_PER_NUDGE as i64 {
            thread
                .write(move |tx| tx.execute("INSERT INTO t VALUES (?1, printf('%.2000c', 'x'))", [id]))
                .await
                .unwrap();
        }
        // At least the rows' text, 2,000 bytes each, has reached the file.
        let expected = before + COMMITS_PER_NUDGE * 2000;
        let deadline = Instant::now() + Duration::from_secs(10);
        while file_len() < expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            file_len() >= expected,
            "the database file stayed at {} bytes (was {before})",
            file_len()
        );
    }
}
