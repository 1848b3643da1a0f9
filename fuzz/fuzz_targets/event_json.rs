//! The event envelope parser on arbitrary bytes: must never panic, and what it accepts
//! must serialize and parse back to the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::Event;

fuzz_target!(|body: &[u8]| {
    if let Ok(event) = Event::from_json(body) {
        let again = Event::from_json(event.to_json().as_bytes()).expect("re-parse");
        assert_eq!(again, event);
    }
});
