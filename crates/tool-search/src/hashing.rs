//! The hash maps of the index: rustc's Fx hash (`rustc-hash`), seeded once per process.
//!
//! Fx is several times cheaper than std's SipHash on short keys, which matters for a build
//! that hashes every word of 11,739 tools. Unseeded, it gives no protection against keys
//! crafted to collide, and the keys here come from catalogs an upstream controls: a listing
//! of names chosen to share a hash would make the table quadratic. Seeding Fx with a per-
//! process random value (from std's randomly keyed `RandomState`) means such names cannot be
//! computed ahead of time, at no cost per hash. Nothing depends on a map's iteration order
//! (tables that are iterated are sorted first), so the seed never changes a ranking.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::OnceLock;

use rustc_hash::FxHasher;

/// Builds Fx hashers that start from the process's random seed.
#[derive(Debug, Clone, Copy)]
pub struct SeededFx(usize);

impl Default for SeededFx {
    fn default() -> Self {
        static SEED: OnceLock<usize> = OnceLock::new();
        SeededFx(*SEED.get_or_init(|| RandomState::new().hash_one(0x5eed_u64) as usize))
    }
}

impl BuildHasher for SeededFx {
    type Hasher = FxHasher;

    fn build_hasher(&self) -> FxHasher {
        FxHasher::with_seed(self.0)
    }
}

pub type FxHashMap<K, V> = HashMap<K, V, SeededFx>;
pub type FxHashSet<K> = HashSet<K, SeededFx>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_per_process_and_maps_work() {
        assert_eq!(SeededFx::default().hash_one("a"), SeededFx::default().hash_one("a"));
        let unseeded = std::hash::BuildHasherDefault::<FxHasher>::default().hash_one("a");
        assert_ne!(
            SeededFx::default().hash_one("a"),
            unseeded,
            "seeded (1 in 2^64 to fail)"
        );
        let mut m: FxHashMap<String, u32> = FxHashMap::default();
        m.insert("x".into(), 1);
        assert_eq!(m["x"], 1);
    }
}
