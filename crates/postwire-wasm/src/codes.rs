//! The status codes that cross the wasm boundary instead of exceptions, and the last
//! error's message.
//!
//! `0` is success; every other value is one of postwire-core's stable [`ErrorCode`]s, in
//! the order of [`ErrorCode::ALL`] starting at 1. The JavaScript wrapper maps them back
//! to the same strings (`missing_header`, ...) with [`code_name`], asked once at load
//! time so the two sides cannot drift apart. On failure the full [`Error`] is kept, and
//! the wrapper asks for its message ([`last_error_message`]) only then: the success path
//! never builds a string.

use std::cell::Cell;

use postwire_core::{Error, ErrorCode};
use wasm_bindgen::prelude::*;

use crate::scratch;

/// Success.
pub const OK: u32 = 0;

thread_local! {
    /// The error behind the last non-zero status. A `Cell` (take/set), so no borrow can fail.
    static LAST_ERROR: Cell<Option<Error>> = const { Cell::new(None) };
}

/// The status of an error code: its position in [`ErrorCode::ALL`] plus one.
pub fn status_of(code: ErrorCode) -> u32 {
    ErrorCode::ALL
        .iter()
        .position(|c| *c == code)
        .map_or(u32::MAX, |i| i as u32 + 1)
}

/// Records `err` as the last error and returns its status.
pub(crate) fn fail(err: Error) -> u32 {
    let status = status_of(err.code());
    LAST_ERROR.with(|l| l.set(Some(err)));
    status
}

/// The status of `result`, recording the error if there is one.
pub(crate) fn status<T>(result: Result<T, Error>) -> u32 {
    match result {
        Ok(_) => OK,
        Err(e) => fail(e),
    }
}

/// The stable string of status `status`, e.g. `"invalid_signature"`; `"ok"` for 0 and
/// `""` for a value that is not a status.
pub fn code_name(status: u32) -> String {
    if status == OK {
        return "ok".into();
    }
    ErrorCode::ALL
        .get((status as usize).wrapping_sub(1))
        .map_or("", |c| c.as_str())
        .into()
}

/// [`code_name`] for JavaScript: the string goes to the start of the scratch buffer (which
/// the wrapper has made at least 4 KiB); returns its length in bytes.
#[wasm_bindgen(js_name = codeName)]
pub fn code_name_to_scratch(status: u32) -> u32 {
    scratch::write_str_lossy(&code_name(status))
}

/// The message of the last failed call (postwire-core's text, which never holds key
/// material), or `""` if none failed yet.
pub fn last_error_message() -> String {
    LAST_ERROR.with(|l| {
        let err = l.take();
        let text = err.as_ref().map(ToString::to_string).unwrap_or_default();
        l.set(err);
        text
    })
}

/// [`last_error_message`] for JavaScript: the message goes to the start of the scratch
/// buffer (cut to its length, at least 4 KiB in the wrapper: messages are far shorter);
/// returns its length in bytes.
#[wasm_bindgen(js_name = lastErrorMessage)]
pub fn last_error_message_to_scratch() -> u32 {
    scratch::write_str_lossy(&last_error_message())
}

/// The status of the last failed call (for calls that return a value, not a status),
/// or 0 if none failed yet.
#[wasm_bindgen(js_name = lastErrorStatus)]
pub fn last_error_status() -> u32 {
    LAST_ERROR.with(|l| {
        let err = l.take();
        let status = err.as_ref().map_or(OK, |e| status_of(e.code()));
        l.set(err);
        status
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_status() {
        for code in ErrorCode::ALL {
            let status = status_of(code);
            assert_ne!(status, OK);
            assert_eq!(code_name(status), code.as_str());
        }
        assert_eq!(code_name(0), "ok");
        assert_eq!(code_name(99), "");
        assert_eq!(code_name(u32::MAX), "");
    }

    #[test]
    fn strings_for_javascript_go_through_the_scratch_buffer() {
        assert!(scratch::write_for_tests(&[]));
        let read = |len: u32| String::from_utf8(scratch::read_for_tests(len as usize)).unwrap();
        assert_eq!(
            read(code_name_to_scratch(status_of(ErrorCode::InvalidSignature))),
            "invalid_signature"
        );
        assert_eq!(read(code_name_to_scratch(0)), "ok");
        assert_eq!(read(code_name_to_scratch(99)), "");
        fail(Error::MissingHeader { name: "webhook-id" });
        assert_eq!(read(last_error_message_to_scratch()), last_error_message());
    }

    #[test]
    fn the_last_error_is_kept_until_the_next_one() {
        let s = fail(Error::MissingHeader { name: "webhook-id" });
        assert_eq!(code_name(s), "missing_header");
        assert!(last_error_message().contains("webhook-id"));
        assert!(
            last_error_message().contains("webhook-id"),
            "reading it does not clear it"
        );
        status(Err::<(), _>(Error::InvalidSecret { reason: "x" }));
        assert!(last_error_message().contains("invalid signing secret"));
        assert_eq!(code_name(last_error_status()), "invalid_secret");
    }
}
