//! Terminal drawing: a table of events, deliveries and what the receiver saw, redrawn in
//! place on a terminal (ANSI cursor moves), or one line per new attempt otherwise.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use postwire_core::{Clock, Timestamp};

use super::clock::ScaledClock;
use super::poll::DeliveryView;
use super::receiver::ReceiverStats;
use super::story::DemoEvent;

/// The live table: redrawn in place on a terminal, or one line per new attempt.
pub(crate) struct View {
    live: bool,
    drawn_lines: usize,
    printed_attempts: BTreeMap<String, usize>,
    last: Option<Frame>,
}

/// What the last render showed, for the final table.
type Frame = (
    Vec<DemoEvent>,
    BTreeMap<String, DeliveryView>,
    ReceiverStats,
    Timestamp,
    String,
);

/// A duration for people: `42s`, `2m05s`, rounded up to the second.
fn human_secs(ms: i64) -> String {
    let s = (ms.max(0) + 999) / 1000;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

impl View {
    pub(crate) fn new(live: bool) -> View {
        View {
            live,
            drawn_lines: 0,
            printed_attempts: BTreeMap::new(),
            last: None,
        }
    }

    fn rows(
        events: &[DemoEvent],
        deliveries: &BTreeMap<String, DeliveryView>,
        stats: &ReceiverStats,
        now: Timestamp,
    ) -> Vec<String> {
        let mut rows = vec![format!(
            "  {:<2} {:<25} {:<21} {:<10} {:<28} {}",
            "#", "EVENT", "ABOUT", "STATE", "ATTEMPTS (receiver status)", "RECEIVER"
        )];
        for (i, e) in events.iter().enumerate() {
            let d = deliveries.get(&e.event_id).cloned().unwrap_or_default();
            let mut attempts = d.attempts.join(" > ");
            if d.state == "pending"
                && let Some(at) = d.next_attempt_at
            {
                let wait = at.unix_millis() - now.unix_millis();
                if wait > 0 && !d.attempts.is_empty() {
                    attempts.push_str(&format!(" > retry in {}", human_secs(wait)));
                }
            }
            let r = stats.events.get(&e.event_id);
            let receiver = match r {
                None => "-".to_owned(),
                Some(r) if r.verified && r.duplicates > 0 => format!("verified; {} duplicate ignored", r.duplicates),
                Some(r) if r.verified && r.lost_acks > 0 => "verified; answer lost (500)".to_owned(),
                Some(r) if r.verified => "verified".to_owned(),
                Some(r) if r.failed_on_purpose > 0 => "down (503 on purpose)".to_owned(),
                Some(_) => "rejected".to_owned(),
            };
            let state = if d.state.is_empty() {
                "queued".to_owned()
            } else {
                d.state.clone()
            };
            rows.push(format!(
                "  {:<2} {:<25} {:<21} {:<10} {:<28} {}",
                i + 1,
                e.event_type,
                e.subject,
                state,
                attempts,
                receiver
            ));
        }
        rows
    }

    fn progress(
        events: &[DemoEvent],
        deliveries: &BTreeMap<String, DeliveryView>,
        stats: &ReceiverStats,
        started: Instant,
        clock: &ScaledClock,
    ) -> String {
        let total = events.len();
        let delivered = events
            .iter()
            .filter(|e| deliveries.get(&e.event_id).is_some_and(|d| d.state == "delivered"))
            .count();
        let retrying = events
            .iter()
            .filter(|e| {
                deliveries
                    .get(&e.event_id)
                    .is_some_and(|d| d.state == "pending" && !d.attempts.is_empty())
            })
            .count();
        let verified = events
            .iter()
            .filter(|e| stats.events.get(&e.event_id).is_some_and(|r| r.verified))
            .count();
        let width = 20;
        let filled = (delivered * width).checked_div(total).unwrap_or(0);
        let real = started.elapsed().as_secs_f64();
        format!(
            "  [{}{}] {delivered}/{total} delivered, {retrying} retrying, {verified} verified | {real:.1} s real = {} on the sender's clock",
            "#".repeat(filled),
            ".".repeat(width - filled),
            human_secs((real * clock.factor() * 1000.0) as i64)
        )
    }

    pub(crate) fn render(
        &mut self,
        events: &[DemoEvent],
        deliveries: &BTreeMap<String, DeliveryView>,
        stats: &ReceiverStats,
        clock: &ScaledClock,
        started: Instant,
    ) {
        let now = clock.now();
        let mut out = std::io::stdout().lock();
        if self.live {
            let mut lines = View::rows(events, deliveries, stats, now);
            lines.push(String::new());
            lines.push(View::progress(events, deliveries, stats, started, clock));
            if self.drawn_lines > 0 {
                let _ = write!(out, "\x1b[{}A", self.drawn_lines);
            }
            for l in &lines {
                let _ = writeln!(out, "\x1b[2K{l}");
            }
            self.drawn_lines = lines.len();
        } else {
            for e in events {
                let Some(d) = deliveries.get(&e.event_id) else { continue };
                let seen = self.printed_attempts.entry(e.event_id.clone()).or_insert(0);
                while *seen < d.attempts.len() {
                    let n = *seen + 1;
                    let outcome = &d.attempts[*seen];
                    let next = if n == d.attempts.len() && d.state == "pending" {
                        d.next_attempt_at
                            .map(|at| {
                                format!(
                                    ", retry in {} (sender clock)",
                                    human_secs(at.unix_millis() - now.unix_millis())
                                )
                            })
                            .unwrap_or_default()
                    } else if n == d.attempts.len() {
                        format!(", {}", d.state)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        out,
                        "  {:>5.1}s  {:<25} {:<21} attempt {n} -> {outcome}{next}",
                        started.elapsed().as_secs_f64(),
                        e.event_type,
                        e.subject
                    );
                    *seen += 1;
                }
            }
        }
        let _ = out.flush();
        self.last = Some((
            events.to_vec(),
            deliveries.clone(),
            stats.clone(),
            now,
            View::progress(events, deliveries, stats, started, clock),
        ));
    }

    pub(crate) fn finish(&mut self) {
        if let Some((events, deliveries, stats, now, progress)) = self.last.take() {
            if !self.live {
                println!();
                for l in View::rows(&events, &deliveries, &stats, now) {
                    println!("{l}");
                }
                println!();
                println!("{progress}");
            }
            println!();
        }
    }
}
