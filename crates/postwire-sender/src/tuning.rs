//! Process-wide settings for a program that runs a sender.
//!
//! The library changes nothing about its process by itself; a binary that runs a sender
//! (the host in `src/bin/host.rs`, `postwire serve`, the benchmark) calls these first
//! thing in `main`.

/// Turns transparent huge pages (THP) off for this process. On Linux only; elsewhere it
/// does nothing.
///
/// A sender's heap grows and shrinks with its backlog: a burst of publishes fills the
/// queue, the dispatcher drains it, and the allocator gives the freed memory back to the
/// system (mimalloc after a second). With THP on (`always`, or `madvise` with an
/// allocator that asks for huge pages, as mimalloc does for its arenas), every page that
/// is used again after that comes back as a fresh 2 MiB page that the kernel first fills
/// with zeros. In the benchmark at one subscription that zeroing took about 7 % of the
/// process's CPU; with THP off the CPU per delivery fell from 38–46 µs to 35–40 µs, and
/// the median rate rose from 42.9k to 47.3k deliveries/s (seven alternated pairs of the
/// same build, with and without `BENCH_KEEP_THP=1`). The sender gains
/// nothing from huge pages in return: its memory is small and its time goes to system
/// calls, not to TLB misses.
///
/// The setting covers every thread of the process (it is kept with the process's memory
/// map) and is inherited by child processes. Calling it again does no harm.
///
/// # Errors
///
/// Whatever `prctl(PR_SET_THP_DISABLE)` reports, for instance on a kernel older than 3.15.
///
/// ```
/// postwire_sender::tuning::disable_transparent_huge_pages().unwrap();
/// ```
pub fn disable_transparent_huge_pages() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    rustix::thread::disable_transparent_huge_pages(true)?;
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_process_reports_transparent_huge_pages_off_afterwards() {
        // A child process, so the setting does not leak into the other tests.
        if std::env::var_os("POSTWIRE_THP_CHILD").is_some() {
            super::disable_transparent_huge_pages().unwrap();
            assert!(rustix::thread::transparent_huge_pages_are_disabled().unwrap());
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let child = std::process::Command::new(exe)
            .args([
                "--exact",
                "tuning::tests::the_process_reports_transparent_huge_pages_off_afterwards",
            ])
            .env("POSTWIRE_THP_CHILD", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&child.stdout);
        assert!(child.status.success() && stdout.contains("1 passed"), "{stdout}");
    }
}
