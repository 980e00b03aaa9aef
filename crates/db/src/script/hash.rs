//! pgbench's hash functions and pseudorandom permutation: `hash_fnv1a`
//! (FNV-1a, 64 bits, over the value's eight bytes, least significant
//! first), `hash_murmur2` (MurmurHash64A's mixing of one eight-byte
//! block) and `permute`, which six rounds of seeded, invertible steps on a
//! power-of-two mask and a random offset make a bijection of `[0, size)`.
//! `permute` draws from PostgreSQL's own generator (xoroshiro128**,
//! seeded by splitmix64), so that a seed gives the permutation pgbench
//! gives; the tests check the values against pgbench on a real server.

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const MURMUR_MUL: u64 = 0xc6a4_a793_5bd1_e995;
const MURMUR_ROT: u32 = 47;

/// FNV-1a of `value`'s eight bytes, the basis mixed with `seed`.
pub(super) fn fnv1a(value: i64, seed: i64) -> i64 {
    use std::hash::Hasher as _;
    let mut hash = fnv::FnvHasher::with_key(FNV_OFFSET_BASIS ^ seed as u64);
    hash.write(&value.to_le_bytes());
    hash.finish() as i64
}

/// MurmurHash64A of one eight-byte block, `value`, with `seed`.
pub(super) fn murmur2(value: i64, seed: i64) -> i64 {
    let mut hash = seed as u64 ^ MURMUR_MUL.wrapping_mul(8);
    let mut k = value as u64;
    k = k.wrapping_mul(MURMUR_MUL);
    k ^= k >> MURMUR_ROT;
    k = k.wrapping_mul(MURMUR_MUL);
    hash ^= k;
    hash = hash.wrapping_mul(MURMUR_MUL);
    hash ^= hash >> MURMUR_ROT;
    hash = hash.wrapping_mul(MURMUR_MUL);
    hash ^= hash >> MURMUR_ROT;
    hash as i64
}

/// PostgreSQL's pseudorandom generator: xoroshiro128**.
struct Prng {
    s0: u64,
    s1: u64,
}

impl Prng {
    /// Seeded as PostgreSQL seeds it: two draws of splitmix64.
    fn seeded(seed: u64) -> Prng {
        let mut state = seed;
        let mut splitmix = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let (s0, s1) = (splitmix(), splitmix());
        if s0 == 0 && s1 == 0 {
            // Never all zeroes: PostgreSQL's fallback, Knuth's constants.
            return Prng {
                s0: 0x5851_f42d_4c95_7f2d,
                s1: 0x1405_7b7e_f767_814f,
            };
        }
        Prng { s0, s1 }
    }

    fn next(&mut self) -> u64 {
        let (s0, mut s1) = (self.s0, self.s1);
        let out = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        s1 ^= s0;
        self.s0 = s0.rotate_left(24) ^ s1 ^ (s1 << 16);
        self.s1 = s1.rotate_left(37);
        out
    }

    /// Uniform in `[0, max]`, by rejecting draws above it after a shift
    /// to its bit length (as PostgreSQL draws a range).
    fn up_to(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let shift = max.leading_zeros();
        loop {
            let v = self.next() >> shift;
            if v <= max {
                return v;
            }
        }
    }
}

/// `permute(value, size, seed)`: `value`'s place in a pseudorandom
/// permutation of `[0, size)` chosen by `seed` (0 when `size` < 2; a
/// `value` outside the range is taken modulo `size` as unsigned, as
/// pgbench takes it).
pub(super) fn permute(value: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let size = size as u64;
    let mut prng = Prng::seeded(seed as u64);
    let mut v = value as u64 % size;
    // The largest power of two at most `size`, as a mask of its bits.
    let bits = 63 - size.leading_zeros();
    let mask = (1u64 << bits) - 1;
    let scramble = |x: u64, m: u64, r: u64| {
        let x = (x.wrapping_mul(m) ^ r) & mask;
        ((x << 1) & mask) | (x >> (bits - 1))
    };
    for _ in 0..6 {
        // The lower part: multiply by an odd number, mix and rotate.
        let m = (prng.next() & mask) | 1;
        let r = prng.next() & mask;
        if v <= mask {
            v = scramble(v, m, r);
        }
        // The upper part, counted from the top.
        let m = (prng.next() & mask) | 1;
        let r = prng.next() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - scramble(t, m, r);
        }
        // A random offset over the whole range.
        v = (v + prng.up_to(size - 1)) % size;
    }
    v as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_is_a_bijection_for_every_small_size_and_seed() {
        for size in 1..=40 {
            for seed in [0, 1, -7, 5432, i64::MAX] {
                let mut seen: Vec<i64> = (0..size).map(|i| permute(i, size, seed)).collect();
                seen.sort_unstable();
                let expected: Vec<i64> = if size < 2 {
                    vec![0; size as usize]
                } else {
                    (0..size).collect()
                };
                assert_eq!(seen, expected, "size {size}, seed {seed}");
            }
        }
        // Outside the range: taken modulo the size, as unsigned.
        assert_eq!(permute(12, 10, 3), permute(2, 10, 3));
        assert_eq!(permute(-1, 10, 3), permute((u64::MAX % 10) as i64, 10, 3));
    }

    #[test]
    fn the_hashes_mix_their_seed_and_every_byte() {
        assert_ne!(fnv1a(1, 0), fnv1a(1, 1));
        assert_ne!(fnv1a(1 << 56, 0), fnv1a(0, 0));
        assert_ne!(murmur2(1, 0), murmur2(1, 1));
        assert_ne!(murmur2(2, 0), murmur2(1, 0));
        // FNV-1a of eight zero bytes with a zero seed: the basis, times
        // the prime (FNV's 64-bit prime) eight times.
        let mut h = FNV_OFFSET_BASIS;
        for _ in 0..8 {
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        assert_eq!(fnv1a(0, 0), h as i64);
    }
}
