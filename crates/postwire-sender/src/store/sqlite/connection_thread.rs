//! The thread that owns a SQLite connection, and its group commit.
//!
//! Every store operation is a job sent to the thread of its connection, which runs them
//! in arrival order. (The store has two: the writer's, for writes and the API's reads,
//! and the claims', which only reads.) Owning the connection on one long-lived thread (instead of borrowing a pooled
//! blocking thread per operation and taking a mutex) keeps the page cache warm and
//! costs one channel hop per operation rather than a thread wake-up and a lock hand-off.
//!
//! **Group commit.** Writes that queue up while the thread is busy are committed
//! together: one `BEGIN IMMEDIATE`, each write in its own savepoint, one `COMMIT`. A
//! write that fails rolls back to its savepoint and reports its error alone; the others
//! commit. No caller hears "done" before the `COMMIT` that made its write durable, so
//! the rule "on disk before the call returns" holds for every write in a group. Under
//! load (publishes from many requests, outcomes of many attempts) this turns many small
//! transactions, each writing its own WAL frames, into a few large ones.
//!
//! A read never joins a group: it runs after the group before it has committed, so it
//! never sees a write that could still roll back.
//!
//! Checkpoints (copying the WAL back into the database file) run on another thread
//! (`checkpointer.rs`), nudged from here every few commits.
//!
//! A job that panics is caught: its caller gets a storage error and the thread goes on.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::oneshot;

use super::super::StoreResult;
use super::checkpointer::{COMMITS_PER_NUDGE, Checkpointer};
use crate::error::SenderError;

/// Most writes committed together.
const MAX_GROUP: usize = 256;

enum Job {
    Read(Box<dyn FnOnce(&mut Connection) + Send>),
    Write(Box<dyn GroupedWrite>),
}

/// A write waiting for, or taking part in, a group commit.
trait GroupedWrite: Send {
    /// Runs the write inside the group's transaction; false when it failed (and must be
    /// rolled back to its savepoint).
    fn run(&mut self, tx: &Transaction<'_>) -> bool;
    /// Tells the caller the outcome, once the group's `COMMIT` (or the error that stopped
    /// the group) is known.
    fn finish(self: Box<Self>, group: Result<(), &rusqlite::Error>);
}

struct PendingWrite<T, F> {
    f: Option<F>,
    out: Option<rusqlite::Result<T>>,
    caller: oneshot::Sender<StoreResult<T>>,
}

impl<T, F> GroupedWrite for PendingWrite<T, F>
where
    T: Send,
    F: FnOnce(&Transaction<'_>) -> rusqlite::Result<T> + Send,
{
    fn run(&mut self, tx: &Transaction<'_>) -> bool {
        let Some(f) = self.f.take() else { return false };
        let out = catch_unwind(AssertUnwindSafe(|| f(tx))).unwrap_or_else(|_| {
            Err(rusqlite::Error::ToSqlConversionFailure(
                "a storage operation panicked".into(),
            ))
        });
        let ok = out.is_ok();
        self.out = Some(out);
        ok
    }

    fn finish(self: Box<Self>, group: Result<(), &rusqlite::Error>) {
        let result = match (self.out, group) {
            (Some(Ok(v)), Ok(())) => Ok(v),
            (Some(Err(e)), _) => Err(SenderError::storage(e)),
            (_, Err(e)) => Err(SenderError::storage(e)),
            (None, Ok(())) => Err(failed_job()),
        };
        let _ = self.caller.send(result);
    }
}

/// A handle to the connection's thread. The thread ends (closing the connection) when
/// the last handle is dropped.
pub(super) struct ConnectionThread {
    jobs: mpsc::Sender<Job>,
    /// Write transactions committed so far.
    commits: Arc<AtomicU64>,
}

fn gone() -> SenderError {
    SenderError::storage("the storage thread stopped")
}

fn failed_job() -> SenderError {
    SenderError::storage("a storage operation failed unexpectedly")
}

impl ConnectionThread {
    /// Moves `conn` to a new thread called `name`, which nudges `checkpointer` (if any)
    /// as it commits.
    pub(super) fn spawn(conn: Connection, name: &str, checkpointer: Option<Checkpointer>) -> StoreResult<Self> {
        let (jobs, rx) = mpsc::channel();
        let commits = Arc::new(AtomicU64::new(0));
        let counter = commits.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || serve(conn, rx, &counter, checkpointer))
            .map_err(|e| SenderError::storage(format!("could not start the storage thread: {e}")))?;
        Ok(ConnectionThread { jobs, commits })
    }

    /// How many write transactions have committed (each may hold many writes).
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `f` on the connection, outside any write transaction.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreResult<T> {
        let (tx, rx) = oneshot::channel();
        let job = Job::Read(Box::new(move |conn| {
            let _ = tx.send(f(conn).map_err(SenderError::storage));
        }));
        self.jobs.send(job).map_err(|_| gone())?;
        rx.await.unwrap_or_else(|_| Err(failed_job()))
    }

    /// Runs `f` in a write transaction, possibly shared with other writes, and resolves
    /// once that transaction has committed (or with the error that stopped it).
    pub(super) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreResult<T> {
        let (caller, rx) = oneshot::channel();
        let job = Job::Write(Box::new(PendingWrite {
            f: Some(f),
            out: None,
            caller,
        }));
        self.jobs.send(job).map_err(|_| gone())?;
        rx.await.unwrap_or_else(|_| Err(failed_job()))
    }
}

/// The thread's loop: reads one by one, writes in groups.
fn serve(mut conn: Connection, rx: mpsc::Receiver<Job>, commits: &AtomicU64, checkpointer: Option<Checkpointer>) {
    let mut next = None;
    loop {
        let job = match next.take() {
            Some(job) => job,
            None => match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        match job {
            Job::Read(f) => {
                // A panic drops the caller's channel, which reports it.
                let _ = catch_unwind(AssertUnwindSafe(|| f(&mut conn)));
            }
            Job::Write(first) => {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(Job::Write(w)) => group.push(w),
                        Ok(read) => {
                            next = Some(read);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                if commit_group(&mut conn, group) {
                    let n = commits.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_multiple_of(COMMITS_PER_NUDGE)
                        && let Some(c) = &checkpointer
                    {
                        c.nudge();
                    }
                }
            }
        }
    }
}

/// One transaction for `group`, a savepoint per write; true when it committed.
fn commit_group(conn: &mut Connection, group: Vec<Box<dyn GroupedWrite>>) -> bool {
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            group.into_iter().for_each(|w| w.finish(Err(&e)));
            return false;
        }
    };
    // A write alone needs no savepoint: if it fails, the whole transaction is rolled back.
    let mut group = group;
    if group.len() == 1
        && let Some(mut w) = group.pop()
    {
        if !w.run(&tx) {
            drop(tx);
            w.finish(Ok(())); // reports its own error
            return false;
        }
        let commit = tx.commit();
        let committed = commit.is_ok();
        w.finish(commit.as_ref().map(|_| ()));
        return committed;
    }
    let mut ran = Vec::with_capacity(group.len());
    let mut pending = group.into_iter();
    while let Some(mut w) = pending.next() {
        let closed = savepoint(&tx, "SAVEPOINT write").and_then(|()| {
            if w.run(&tx) {
                savepoint(&tx, "RELEASE write")
            } else {
                savepoint(&tx, "ROLLBACK TO write").and_then(|()| savepoint(&tx, "RELEASE write"))
            }
        });
        ran.push(w);
        if let Err(e) = closed {
            // A savepoint that cannot be opened or closed leaves the transaction in an
            // unknown state: roll all of it back (by dropping `tx`) and say so to all.
            drop(tx);
            ran.into_iter().chain(pending).for_each(|w| w.finish(Err(&e)));
            return false;
        }
    }
    let commit = tx.commit();
    let committed = commit.is_ok();
    for w in ran {
        w.finish(commit.as_ref().map(|_| ()));
    }
    committed
}

/// Runs a savepoint statement through the statement cache: `execute_batch` would
/// compile it again for each write of each group.
fn savepoint(tx: &Transaction<'_>, sql: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(sql)?.execute([]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread() -> (tempfile::TempDir, ConnectionThread) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("t.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY)")
            .unwrap();
        (dir, ConnectionThread::spawn(conn, "test", None).unwrap())
    }

    async fn ids(t: &ConnectionThread) -> Vec<i64> {
        t.read(|c| {
            c.prepare("SELECT id FROM t ORDER BY id")?
                .query_map([], |r| r.get(0))?
                .collect()
        })
        .await
        .unwrap()
    }

    /// Holds the thread busy until the returned sender is dropped or sent to.
    async fn block(t: &Arc<ConnectionThread>) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started, on_start) = oneshot::channel();
        let t = t.clone();
        let handle = tokio::spawn(async move {
            t.read(move |_| {
                let _ = started.send(());
                let _ = wait.recv();
                Ok(())
            })
            .await
            .unwrap();
        });
        on_start.await.unwrap();
        (release, handle)
    }

    #[tokio::test]
    async fn writes_queued_together_commit_in_one_transaction_and_fail_alone() {
        let (_dir, t) = thread();
        let t = Arc::new(t);
        let (release, blocked) = block(&t).await;
        let before = t.commits();
        let mut writes = Vec::new();
        for id in [1, 1, 2] {
            let t = t.clone();
            writes.push(tokio::spawn(async move {
                t.write(move |tx| tx.execute("INSERT INTO t (id) VALUES (?1)", [id]))
                    .await
            }));
            // Let each write reach the queue, in this order.
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        release.send(()).unwrap();
        blocked.await.unwrap();
        let results: Vec<_> = futures_join(writes).await;
        assert!(results[0].is_ok());
        // The duplicate key fails, alone: its savepoint is rolled back.
        assert!(results[1].as_ref().unwrap_err().to_string().contains("UNIQUE"));
        assert!(results[2].is_ok());
        assert_eq!(ids(&t).await, vec![1, 2]);
        assert_eq!(t.commits() - before, 1, "three queued writes, one commit");
    }

    #[tokio::test]
    async fn a_panicking_job_fails_alone_and_the_thread_goes_on() {
        let (_dir, t) = thread();
        let err = t
            .write(|_tx| -> rusqlite::Result<()> { panic!("boom") })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
        assert!(t.read(|_| -> rusqlite::Result<()> { panic!("boom") }).await.is_err());
        t.write(|tx| tx.execute("INSERT INTO t (id) VALUES (7)", []))
            .await
            .unwrap();
        assert_eq!(ids(&t).await, vec![7]);
    }

    async fn futures_join<T>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    }
}
