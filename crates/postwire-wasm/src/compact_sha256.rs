//! SHA-256's compression function in its rolled form: a tenth of the code of `sha2`'s.
//!
//! Why a second one: the module is compiled lazily, one function on its first call, and V8
//! spends about 0.35 ms on Node 20 compiling `sha2::compress256`, whose 64 rounds are
//! unrolled into 7.9 KB of wasm. That is a tenth of a cold `require` + first verify. This
//! loop compiles in a fraction of it, and runs slower: so [`crate::schedule`] uses it only
//! for the first [`COMPACT_BLOCKS`] blocks a module hashes, and for none of a large body;
//! after that `sha2`'s unrolled one, compiled once, does all the work. The two give the same
//! output (property-tested against `sha2` below); one `sha2` build cannot hold both its
//! backends (its `force-soft-compact` feature replaces the unrolled one).

use std::sync::atomic::{AtomicU32, Ordering};

/// Blocks (64 bytes each) a module hashes with the rolled loop before it switches to
/// `sha2`'s unrolled compression for good: 64 KiB, far more than a cold start needs
/// (a key schedule is 2 blocks, a small delivery a few), far less than any warm loop.
pub const COMPACT_BLOCKS: u32 = 1024;

/// Blocks hashed so far through [`take_compact`]'s decisions (saturates at
/// [`COMPACT_BLOCKS`]). wasm32 has one thread; the atomic only keeps this safe Rust.
static BLOCKS_HASHED: AtomicU32 = AtomicU32::new(0);

/// Whether the next `blocks` blocks go through the rolled loop: yes while the module has
/// hashed fewer than [`COMPACT_BLOCKS`] in all, counting these; a run that would cross
/// the limit (a large body) switches at once.
pub fn take_compact(blocks: usize) -> bool {
    let done = BLOCKS_HASHED.load(Ordering::Relaxed);
    match u32::try_from(blocks).ok().and_then(|n| done.checked_add(n)) {
        Some(after) if after <= COMPACT_BLOCKS => {
            BLOCKS_HASHED.store(after, Ordering::Relaxed);
            true
        }
        _ => {
            BLOCKS_HASHED.store(COMPACT_BLOCKS, Ordering::Relaxed);
            false
        }
    }
}

/// SHA-256's round constants (FIPS 180-4, 4.2.2).
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

/// Compresses one 64-byte block into `state` (FIPS 180-4, 6.2.2), as `sha2::compress256`.
#[expect(
    clippy::indexing_slicing,
    reason = "every index is reduced modulo 16 into a [u32; 16], so none can be out of bounds (and the compiler drops the checks)"
)]
#[inline(never)]
pub fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
    // The message schedule, kept as a ring of 16 words.
    let mut w = [0u32; 16];
    for (word, bytes) in w.iter_mut().zip(block.chunks_exact(4)) {
        *word = bytes.iter().fold(0, |acc, b| (acc << 8) | u32::from(*b));
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for (round, k) in K.iter().enumerate() {
        let slot = round % 16;
        if round >= 16 {
            let w15 = w[(round + 1) % 16];
            let w2 = w[(round + 14) % 16];
            let s0 = w15.rotate_right(7) ^ w15.rotate_right(18) ^ (w15 >> 3);
            let s1 = w2.rotate_right(17) ^ w2.rotate_right(19) ^ (w2 >> 10);
            w[slot] = w[slot]
                .wrapping_add(s0)
                .wrapping_add(w[(round + 9) % 16])
                .wrapping_add(s1);
        }
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(*k)
            .wrapping_add(w[slot]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // proptest does not build for wasm32 (the wasm-bindgen tests); the host runs this.
    #[cfg(not(target_arch = "wasm32"))]
    mod against_sha2 {
        use super::compress;
        use proptest::prelude::*;
        use sha2::compress256;
        use sha2::digest::generic_array::GenericArray;

        fn unrolled(state: &mut [u32; 8], block: &[u8; 64]) {
            compress256(state, std::slice::from_ref(GenericArray::from_slice(block)));
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]
            #[test]
            fn equals_sha2_for_any_state_and_block(state in any::<[u32; 8]>(), block in prop::collection::vec(any::<u8>(), 64)) {
                let block: [u8; 64] = block.try_into().unwrap();
                let (mut ours, mut theirs) = (state, state);
                compress(&mut ours, &block);
                unrolled(&mut theirs, &block);
                prop_assert_eq!(ours, theirs);
            }
        }
    }

    #[test]
    fn hashes_abc_as_fips_180_2_says() {
        // FIPS 180-2, appendix B.1: SHA-256("abc"), one padded block from the initial state.
        let mut block = [0u8; 64];
        block[..3].copy_from_slice(b"abc");
        block[3] = 0x80;
        block[63] = 24;
        let mut state = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
        ];
        compress(&mut state, &block);
        assert_eq!(
            state,
            [
                0xba7816bf, 0x8f01cfea, 0x414140de, 0x5dae2223, 0xb00361a3, 0x96177a9c, 0xb410ff61, 0xf20015ad
            ]
        );
    }
}
