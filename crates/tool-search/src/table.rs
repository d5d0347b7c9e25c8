//! Compact read-only lookup tables for the index.
//!
//! A hash map of `String → Vec<u32>` costs a `String` and a `Vec` (48 bytes of headers plus
//! two allocations) per key, and the index's name, affix and typo tables have a key per name
//! form, affix and deletion. A [`StrTable`] stores every key once in one text arena, sorted,
//! with all values in one array: lookups are a binary search (a few hundred nanoseconds on the
//! largest catalog), and the memory is the text plus 12 bytes per key and 4 per value.

use crate::hashing::FxHashMap;

/// A sorted multimap from strings to `u32`s (values keep their insertion order).
#[derive(Debug, Default)]
pub(super) struct StrTable {
    text: String,
    /// (start, end) of each key in `text`, sorted by key.
    keys: Vec<(u32, u32)>,
    /// Values of key `i`: `values[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<u32>,
    values: Vec<u32>,
}

impl StrTable {
    pub fn from_map(map: FxHashMap<String, Vec<u32>>) -> StrTable {
        let mut entries: Vec<(String, Vec<u32>)> = map.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Keys of a map are distinct, so sorted they ascend strictly; an index's text and
        // values stay far below 4 GiB.
        StrTable::from_sorted(entries).unwrap_or_default()
    }

    /// A table from entries already in strictly ascending key order (as [`StrTable::iter`]
    /// gives them); `None` if they are not.
    pub fn from_sorted(entries: Vec<(String, Vec<u32>)>) -> Option<StrTable> {
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            return None;
        }
        let mut t = StrTable {
            text: String::with_capacity(entries.iter().map(|e| e.0.len()).sum()),
            keys: Vec::with_capacity(entries.len()),
            offsets: Vec::with_capacity(entries.len() + 1),
            values: Vec::with_capacity(entries.iter().map(|e| e.1.len()).sum()),
        };
        t.offsets.push(0);
        for (k, vs) in entries {
            let start = u32::try_from(t.text.len()).ok()?;
            t.text.push_str(&k);
            t.keys.push((start, u32::try_from(t.text.len()).ok()?));
            t.values.extend(vs);
            t.offsets.push(u32::try_from(t.values.len()).ok()?);
        }
        Some(t)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// A table with one value per key.
    pub fn from_single(map: FxHashMap<String, u32>) -> StrTable {
        StrTable::from_map(map.into_iter().map(|(k, v)| (k, vec![v])).collect())
    }

    fn key(&self, i: usize) -> &str {
        let (s, e) = self.keys[i];
        &self.text[s as usize..e as usize]
    }

    fn values_of(&self, i: usize) -> &[u32] {
        &self.values[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The values of `key` (empty when absent).
    pub fn get(&self, key: &str) -> &[u32] {
        match self
            .keys
            .binary_search_by(|&(s, e)| self.text[s as usize..e as usize].cmp(key))
        {
            Ok(i) => self.values_of(i),
            Err(_) => &[],
        }
    }

    /// The first value of `key`.
    pub fn first(&self, key: &str) -> Option<u32> {
        self.get(key).first().copied()
    }

    /// Every key with its values, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u32])> {
        (0..self.keys.len()).map(|i| (self.key(i), self.values_of(i)))
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.keys.capacity() * 8 + self.offsets.capacity() * 4 + self.values.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_and_iteration() {
        let mut m: FxHashMap<String, Vec<u32>> = FxHashMap::default();
        m.insert("pear".into(), vec![3, 1]);
        m.insert("apple".into(), vec![2]);
        m.insert("".into(), vec![9]);
        let t = StrTable::from_map(m);
        assert_eq!(t.get("pear"), [3, 1], "insertion order kept");
        assert_eq!(t.get("apple"), [2]);
        assert_eq!(t.get(""), [9]);
        assert_eq!(t.get("fig"), [] as [u32; 0]);
        assert_eq!(t.first("apple"), Some(2));
        let keys: Vec<&str> = t.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["", "apple", "pear"]);
        assert_eq!(StrTable::default().get("x"), [] as [u32; 0]);
    }
}
