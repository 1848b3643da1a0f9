//! HMAC-SHA256 from a key schedule that JavaScript holds.
//!
//! A key schedule is the SHA-256 state after the HMAC's inner pad block and the state
//! after its outer pad block: 64 bytes from which every HMAC under that key is computed
//! with no further key processing (what postwire-core's `Secret` keeps inside its
//! `Hmac<Sha256>`). Each `Webhook` object of the npm package keeps its schedules in a
//! JavaScript `Uint8Array` and passes them with every call, so no object owns anything
//! in wasm memory: the garbage collector frees it all, in runtimes without
//! `FinalizationRegistry` too (workerd before 2025-05-05), and `dispose()` only has to
//! zero an array. The outputs equal postwire-core's (tested against `Secret::sign_as_sent`).
//! The schedule is key material: whoever holds it can sign.

use sha2::digest::generic_array::GenericArray;
use sha2::{Digest, Sha256, compress256};

use crate::compact_sha256;

/// Bytes in one serialized key schedule: the inner and the outer state, 8 big-endian words each.
pub const SCHEDULE_LEN: usize = 64;
const BLOCK: usize = 64;
/// SHA-256's initial state.
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The two SHA-256 states of HMAC-SHA256 under one key.
#[derive(Clone, Copy)]
pub struct KeySchedule {
    inner: [u32; 8],
    outer: [u32; 8],
}

/// Compresses whole blocks into `state`: the rolled loop on a cold module, `sha2`'s
/// unrolled compression once the module is warm or for a large run (see
/// [`compact_sha256`](crate::compact_sha256)). `blocks.len()` is a multiple of [`BLOCK`].
fn compress_blocks(state: &mut [u32; 8], blocks: &[u8]) {
    let blocks = blocks.chunks_exact(BLOCK);
    if compact_sha256::take_compact(blocks.len()) {
        for block in blocks {
            // Always 64 bytes (`chunks_exact`).
            if let Ok(block) = block.try_into() {
                compact_sha256::compress(state, block);
            }
        }
    } else {
        compress_unrolled(state, blocks);
    }
}

/// SHA-256 of a key longer than a block, as HMAC hashes it. Out of line: real keys are
/// 24 to 64 bytes, and V8 compiles a function whole, branches never taken included, on
/// its first call (`keySchedule`'s, at a cold start).
#[inline(never)]
fn hash_long_key(key: &[u8]) -> [u8; 32] {
    Sha256::digest(key).into()
}

/// `sha2`'s unrolled compression, in a function of its own: V8 compiles a function whole
/// on its first call, so this one must not be inlined into the cold path's callers.
#[inline(never)]
fn compress_unrolled(state: &mut [u32; 8], blocks: std::slice::ChunksExact<'_, u8>) {
    for block in blocks {
        compress256(state, std::slice::from_ref(GenericArray::from_slice(block)));
    }
}

fn compress(state: &mut [u32; 8], block: &[u8; BLOCK]) {
    compress_blocks(state, block);
}

impl KeySchedule {
    /// The schedule of `key` (any length; keys over 64 bytes are hashed first, as HMAC says).
    pub fn new(key: &[u8]) -> KeySchedule {
        let mut block = [0u8; BLOCK];
        let digest;
        let key = if key.len() > BLOCK {
            digest = hash_long_key(key);
            digest.as_slice()
        } else {
            key
        };
        for (b, k) in block.iter_mut().zip(key) {
            *b = *k;
        }
        let mut pad = [0u8; BLOCK];
        let mut states = [IV; 2];
        for (state, byte) in states.iter_mut().zip([0x36u8, 0x5c]) {
            for (p, k) in pad.iter_mut().zip(&block) {
                *p = k ^ byte;
            }
            compress(state, &pad);
        }
        pad.fill(0);
        block.fill(0);
        KeySchedule {
            inner: states[0],
            outer: states[1],
        }
    }

    /// The 64 bytes JavaScript keeps.
    pub fn to_bytes(self) -> [u8; SCHEDULE_LEN] {
        let mut out = [0u8; SCHEDULE_LEN];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.inner.iter().chain(&self.outer)) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// A schedule from the bytes of [`to_bytes`](Self::to_bytes); `None` unless exactly 64 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<KeySchedule> {
        if bytes.len() != SCHEDULE_LEN {
            return None;
        }
        let mut words = [0u32; 16];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(4)) {
            *word = u32::from_be_bytes(chunk.try_into().ok()?);
        }
        let mut inner = [0u32; 8];
        let mut outer = [0u32; 8];
        let (first, second) = words.split_at(8);
        inner.copy_from_slice(first);
        outer.copy_from_slice(second);
        Some(KeySchedule { inner, outer })
    }

    /// Starts an HMAC: feed the message with [`Mac::update`], then [`Mac::finish`].
    pub fn start(&self) -> Mac {
        Mac {
            state: self.inner,
            outer: self.outer,
            buf: [0; BLOCK],
            buf_len: 0,
            total: BLOCK as u64,
        }
    }

    /// HMAC-SHA256 of the concatenation of `parts`.
    pub fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.start();
        for part in parts {
            mac.update(part);
        }
        mac.finish()
    }
}

/// One HMAC-SHA256 being computed (from [`KeySchedule::start`]).
pub struct Mac {
    state: [u32; 8],
    outer: [u32; 8],
    buf: [u8; BLOCK],
    buf_len: usize,
    /// Bytes hashed by the inner hash so far, the pad block included.
    total: u64,
}

impl Mac {
    /// Feeds the next bytes of the message.
    pub fn update(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.buf_len > 0 {
            let take = (BLOCK - self.buf_len).min(data.len());
            let (head, tail) = data.split_at(take);
            for (b, d) in self.buf.iter_mut().skip(self.buf_len).zip(head) {
                *b = *d;
            }
            self.buf_len += take;
            data = tail;
            if self.buf_len < BLOCK {
                return;
            }
            let block = self.buf;
            compress(&mut self.state, &block);
            self.buf_len = 0;
        }
        let (whole, rest) = data.split_at(data.len() - data.len() % BLOCK);
        compress_blocks(&mut self.state, whole);
        for (b, r) in self.buf.iter_mut().zip(rest) {
            *b = *r;
        }
        self.buf_len = rest.len();
    }

    /// The 32-byte HMAC.
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.total.wrapping_mul(8);
        let mut block = [0u8; BLOCK];
        for (b, s) in block.iter_mut().zip(&self.buf).take(self.buf_len) {
            *b = *s;
        }
        // `buf_len` < BLOCK: a full buffer is compressed as soon as it fills.
        if let Some(end) = block.get_mut(self.buf_len) {
            *end = 0x80;
        }
        if self.buf_len >= BLOCK - 8 {
            compress(&mut self.state, &block);
            block = [0; BLOCK];
        }
        write_length(&mut block, bits);
        compress(&mut self.state, &block);

        // The outer hash: the outer pad block (already in `outer`) then the inner digest.
        let mut outer_block = [0u8; BLOCK];
        for (chunk, word) in outer_block.chunks_exact_mut(4).zip(&self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        if let Some(end) = outer_block.get_mut(32) {
            *end = 0x80;
        }
        write_length(&mut outer_block, ((BLOCK + 32) * 8) as u64);
        let mut state = self.outer;
        compress(&mut state, &outer_block);
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(&state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        self.buf.fill(0);
        out
    }
}

/// Writes SHA-256's message length (in bits, big-endian) into the last 8 bytes of a block.
fn write_length(block: &mut [u8; BLOCK], bits: u64) {
    for (b, l) in block.iter_mut().skip(BLOCK - 8).zip(bits.to_be_bytes()) {
        *b = l;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postwire_core::{Secret, WebhookHeaders};

    /// postwire-core's HMAC of `<id>.<ts>.<body>` under `key`.
    fn core_mac(key: &[u8], id: &str, ts: &str, body: &[u8]) -> [u8; 32] {
        let secret = Secret::from_bytes(key).unwrap();
        let headers = WebhookHeaders::new(id, ts, "").unwrap();
        *secret.sign_as_sent(&headers, body).as_bytes()
    }

    #[test]
    fn equals_core_for_every_length_boundary_and_key_size() {
        let body: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        for key_len in [1, 31, 32, 63, 64, 65, 200] {
            let key: Vec<u8> = (0..key_len as u8).collect();
            let schedule = KeySchedule::new(&key);
            let again = KeySchedule::from_bytes(&schedule.to_bytes()).unwrap();
            for body_len in [0, 1, 40, 41, 47, 48, 55, 56, 63, 64, 65, 119, 120, 128, 300] {
                let body = &body[..body_len];
                let want = core_mac(&key, "msg_1", "1700000000", body);
                assert_eq!(again.mac(&[b"msg_1.1700000000.", body]), want, "{key_len} {body_len}");
                // Fed in awkward pieces: the same.
                let mut mac = schedule.start();
                for piece in [&b"msg_1."[..], b"1700000000", b"."] {
                    mac.update(piece);
                }
                for c in body.chunks(13) {
                    mac.update(c);
                }
                assert_eq!(mac.finish(), want);
            }
        }
        assert!(KeySchedule::from_bytes(&[0; 63]).is_none());
    }

    #[test]
    fn a_large_body_switches_to_the_unrolled_compression_for_good() {
        let key = b"a key";
        let big: Vec<u8> = (0..(compact_sha256::COMPACT_BLOCKS as usize + 1) * 64)
            .map(|i| i as u8)
            .collect();
        let schedule = KeySchedule::new(key);
        assert_eq!(
            schedule.mac(&[b"msg_1.1700000000.", &big]),
            core_mac(key, "msg_1", "1700000000", &big)
        );
        // The run of more than COMPACT_BLOCKS blocks took the unrolled path and ended the
        // compact one (in every test of this process: the outputs are the same either way).
        assert!(!compact_sha256::take_compact(1));
        assert_eq!(
            schedule.mac(&[b"msg_1.1700000000.", b"{}"]),
            core_mac(key, "msg_1", "1700000000", b"{}")
        );
    }
}
