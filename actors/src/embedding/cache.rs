//! A small least-recently-used map of query text → query vector: agents repeat and rephrase
//! searches, and a repeated query then costs a hash instead of a forward pass. Keys are the
//! SHA-256 of the (clipped) query, so the cache holds no query text.

use std::collections::HashMap;
use std::sync::Arc;

use embed::store::{text_key, Key};

/// At most `capacity` vectors; the least recently used one is evicted first.
#[derive(Debug)]
pub struct QueryCache {
    capacity: usize,
    /// Vector and the tick of its last use.
    entries: HashMap<Key, (Arc<[f32]>, u64)>,
    tick: u64,
}

/// Default capacity: 512 vectors of 384 floats are 0.8 MB.
pub const QUERY_CACHE_ENTRIES: usize = 512;

impl QueryCache {
    pub fn new(capacity: usize) -> QueryCache {
        QueryCache {
            capacity,
            entries: HashMap::with_capacity(capacity.min(4096)),
            tick: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The vector of `query`, marking it used.
    pub fn get(&mut self, query: &str) -> Option<Arc<[f32]>> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(&text_key(query)).map(|(v, used)| {
            *used = tick;
            v.clone()
        })
    }

    /// Remembers `query`'s vector, evicting the least recently used entry when full.
    pub fn insert(&mut self, query: &str, vector: Arc<[f32]>) {
        if self.capacity == 0 {
            return;
        }
        self.tick += 1;
        let key = text_key(query);
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            // a linear scan: at a few hundred entries it costs less than one forward pass by
            // four orders of magnitude, and needs no second structure to keep in step
            if let Some(oldest) = self.entries.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| *k) {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(key, (vector, self.tick));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: f32) -> Arc<[f32]> {
        Arc::from(vec![x])
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = QueryCache::new(2);
        c.insert("a", v(1.0));
        c.insert("b", v(2.0));
        assert_eq!(c.get("a").as_deref(), Some(&[1.0][..]), "a is now the most recent");
        c.insert("c", v(3.0));
        assert_eq!(c.len(), 2);
        assert!(c.get("b").is_none(), "b was the least recently used");
        assert!(c.get("a").is_some() && c.get("c").is_some());
    }

    #[test]
    fn replacing_a_key_does_not_evict() {
        let mut c = QueryCache::new(2);
        c.insert("a", v(1.0));
        c.insert("b", v(2.0));
        c.insert("a", v(9.0));
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("a").as_deref(), Some(&[9.0][..]));
        assert!(c.get("b").is_some());
    }

    #[test]
    fn capacity_zero_caches_nothing_and_the_size_stays_bounded() {
        let mut c = QueryCache::new(0);
        c.insert("a", v(1.0));
        assert!(c.is_empty());
        let mut c = QueryCache::new(8);
        for i in 0..100 {
            c.insert(&format!("q{i}"), v(i as f32));
        }
        assert_eq!(c.len(), 8);
        assert!(c.get("q99").is_some() && c.get("q91").is_none());
    }
}
