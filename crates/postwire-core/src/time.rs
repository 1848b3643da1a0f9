//! Time as the core sees it: whole seconds for the `webhook-timestamp` header
//! ([`UnixTime`]), milliseconds for JSON timestamps ([`Timestamp`]), and a [`Clock`]
//! that callers inject.
//!
//! The core never reads the system clock by itself: on `wasm32-unknown-unknown`
//! `SystemTime::now()` panics, and tests of time-driven behaviour (retries over a day,
//! pauses after 72 hours) need a clock they can move. [`SystemClock`] exists only on
//! targets that have one; [`ManualClock`] is the clock for tests.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::Error;

/// Seconds since the Unix epoch, as carried by `webhook-timestamp`.
///
/// ```
/// use postwire_core::UnixTime;
/// let t = UnixTime::from_secs(1_614_265_330);
/// assert_eq!(t.as_secs(), 1_614_265_330);
/// assert_eq!(t.to_string(), "1614265330");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(i64);

impl UnixTime {
    /// From seconds since the epoch.
    pub const fn from_secs(secs: i64) -> Self {
        UnixTime(secs)
    }

    /// Seconds since the epoch.
    pub const fn as_secs(self) -> i64 {
        self.0
    }
}

impl fmt::Display for UnixTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A point in time with millisecond precision, written in JSON as an ISO 8601 / RFC 3339
/// UTC string with exactly three fraction digits, e.g. `"2026-11-22T01:46:18.123Z"`.
///
/// Parsing accepts any RFC 3339 timestamp (any offset, any number of fraction digits)
/// and normalises it to UTC milliseconds, so receivers are lenient and senders exact.
///
/// ```
/// use postwire_core::Timestamp;
/// let t: Timestamp = "2026-11-22T02:46:18.1239+01:00".parse().unwrap();
/// assert_eq!(t.to_string(), "2026-11-22T01:46:18.123Z");
/// assert_eq!(t.unix_time().as_secs(), t.unix_millis() / 1000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// Years 0000..=9999 only: the range RFC 3339 can write.
const MIN_MILLIS: i64 = -62_167_219_200_000;
const MAX_MILLIS: i64 = 253_402_300_799_999;

impl Timestamp {
    /// From milliseconds since the epoch, clamped to the years 0000..=9999 that
    /// RFC 3339 can represent.
    pub const fn from_unix_millis(millis: i64) -> Self {
        Timestamp(if millis < MIN_MILLIS {
            MIN_MILLIS
        } else if millis > MAX_MILLIS {
            MAX_MILLIS
        } else {
            millis
        })
    }

    /// Milliseconds since the epoch.
    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    /// Whole seconds since the epoch (rounded down), for `webhook-timestamp`.
    pub const fn unix_time(self) -> UnixTime {
        UnixTime(self.0.div_euclid(1000))
    }

    /// This time plus `millis` (which may be negative), saturating at the ends of the range.
    pub const fn add_millis(self, millis: i64) -> Self {
        Timestamp::from_unix_millis(self.0.saturating_add(millis))
    }

    fn to_datetime(self) -> OffsetDateTime {
        // In range by construction, so this cannot fail; fall back to the epoch anyway.
        OffsetDateTime::from_unix_timestamp_nanos(self.0 as i128 * 1_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dt = self.to_datetime();
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second(),
            dt.millisecond()
        )
    }
}

impl FromStr for Timestamp {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let dt = OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|_| Error::payload(format_args!("`{}` is not an RFC 3339 timestamp", Truncated(s))))?;
        let millis = dt.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(millis)
            .ok()
            .filter(|m| (MIN_MILLIS..=MAX_MILLIS).contains(m))
            .map(Timestamp)
            .ok_or_else(|| Error::payload("timestamp out of range"))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Shows at most 40 characters of untrusted input in an error message.
pub(crate) struct Truncated<'a>(pub &'a str);

impl fmt::Display for Truncated<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(40) {
            Some((i, _)) => write!(f, "{}…", &self.0[..i]),
            None => f.write_str(self.0),
        }
    }
}

/// A source of the current time. Inject one wherever behaviour depends on time.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

/// The operating system's clock. Not available on `wasm32-unknown-unknown`, where it would
/// panic: take the time from JavaScript (`Date.now()`) there.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let millis = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        };
        Timestamp::from_unix_millis(millis)
    }
}

/// A clock that only moves when told to: for tests of time-driven behaviour.
///
/// ```
/// use postwire_core::{Clock, ManualClock, Timestamp};
/// let clock = ManualClock::new(Timestamp::from_unix_millis(0));
/// clock.advance_millis(30_000);
/// assert_eq!(clock.now().unix_time().as_secs(), 30);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock(AtomicI64::new(start.unix_millis()))
    }

    /// Moves the clock forward (or back, with a negative value).
    pub fn advance_millis(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the clock to `t`.
    pub fn set(&self, t: Timestamp) {
        self.0.store(t.unix_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_exactly_three_fraction_digits_in_utc() {
        let t = Timestamp::from_unix_millis(1_614_265_330_007);
        assert_eq!(t.to_string(), "2021-02-25T15:02:10.007Z");
        assert_eq!(
            "2021-02-25T15:02:10Z".parse::<Timestamp>().unwrap().unix_millis(),
            1_614_265_330_000
        );
    }

    #[test]
    fn negative_millis_round_down_to_seconds() {
        assert_eq!(Timestamp::from_unix_millis(-1).unix_time().as_secs(), -1);
    }

    #[test]
    fn extreme_values_are_clamped_not_panicking() {
        let hi = Timestamp::from_unix_millis(i64::MAX);
        let lo = Timestamp::from_unix_millis(i64::MIN);
        assert_eq!(hi.to_string(), "9999-12-31T23:59:59.999Z");
        assert_eq!(lo.to_string(), "0000-01-01T00:00:00.000Z");
        assert_eq!(hi.add_millis(i64::MAX), hi);
    }

    #[test]
    fn rejects_non_rfc3339() {
        for bad in ["", "2021-02-25", "yesterday", "2021-02-25T15:02:10"] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad}");
        }
    }
}
