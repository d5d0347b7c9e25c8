//! The bounds on questions: per call, per upstream exchange, per round, and [`Bounded`], the
//! one table that holds what waits on a client under a per-owner and a total bound (a
//! 2025-era session's questions; a 2026-07-28 client group's held calls).

use std::collections::HashMap;
use std::time::Duration;

/// Questions one call may have unanswered at a time; more are declined at once.
pub const MAX_QUESTIONS: usize = 16;
/// Requests an upstream may have unanswered on one call at a time (`ping` included): more
/// are declined at once.
pub const MAX_UNANSWERED: usize = 64;
/// Rounds of 2026-07-28 `input_required` one call may go through on its client's behalf.
pub const MAX_ROUNDS: usize = 16;
/// How many calls all client groups together may have held.
pub const MAX_HELD_TOTAL: usize = 1024;
/// A round that asks nothing (only a `requestState`: "come back shortly") is retried after
/// this long.
pub const EMPTY_ROUND_PAUSE: Duration = Duration::from_millis(100);

/// Items per owner and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub per_owner: usize,
    pub total: usize,
}

/// Items under unique ids, each with its owner, at most `limits.per_owner` per owner and
/// `limits.total` in all.
#[derive(Debug)]
pub struct Bounded<T> {
    items: HashMap<String, (String, T)>,
    per_owner: HashMap<String, usize>,
    limits: Limits,
}

impl<T> Bounded<T> {
    pub fn new(limits: Limits) -> Bounded<T> {
        Bounded {
            items: HashMap::new(),
            per_owner: HashMap::new(),
            limits,
        }
    }

    /// Whether `owner` may add one more item.
    pub fn has_room(&self, owner: &str) -> bool {
        let mine = self.per_owner.get(owner).copied().unwrap_or(0);
        mine < self.limits.per_owner && self.items.len() < self.limits.total
    }

    /// Adds `item` under `id` for `owner`; the item back when a bound is reached.
    pub fn insert(&mut self, owner: String, id: String, item: T) -> Result<(), T> {
        if !self.has_room(&owner) {
            return Err(item);
        }
        *self.per_owner.entry(owner.clone()).or_insert(0) += 1;
        if let Some((old_owner, _)) = self.items.insert(id, (owner, item)) {
            // ids are unique; a reused one gives its old place back
            self.forget(&old_owner);
        }
        Ok(())
    }

    /// Takes the item under `id`.
    pub fn remove(&mut self, id: &str) -> Option<T> {
        let (owner, item) = self.items.remove(id)?;
        self.forget(&owner);
        Some(item)
    }

    /// Takes the item under `id` if `owner` owns it (else it stays).
    pub fn remove_owned(&mut self, owner: &str, id: &str) -> Option<T> {
        match self.items.get(id) {
            Some((o, _)) if o == owner => self.remove(id),
            _ => None,
        }
    }

    /// Drops every item of `owner`.
    pub fn drop_owner(&mut self, owner: &str) {
        self.items.retain(|_, (o, _)| o != owner);
        self.per_owner.remove(owner);
    }

    /// Drops the items of `owner` that `stale` says nobody waits for any more.
    pub fn purge(&mut self, owner: &str, stale: impl Fn(&T) -> bool) {
        let ids: Vec<String> = self
            .items
            .iter()
            .filter(|(_, (o, item))| o == owner && stale(item))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.remove(&id);
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn forget(&mut self, owner: &str) {
        if let Some(n) = self.per_owner.get_mut(owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(per_owner: usize, total: usize) -> Bounded<u32> {
        Bounded::new(Limits { per_owner, total })
    }

    #[test]
    fn items_are_bounded_per_owner_and_in_all() {
        let mut t = table(2, 3);
        assert!(t.insert("a".into(), "a1".into(), 1).is_ok());
        assert!(t.insert("a".into(), "a2".into(), 2).is_ok());
        assert_eq!(t.insert("a".into(), "a3".into(), 3), Err(3), "2 per owner");
        assert!(t.insert("b".into(), "b1".into(), 4).is_ok());
        assert_eq!(t.insert("c".into(), "c1".into(), 5), Err(5), "3 in all");
        assert_eq!(t.remove("a1"), Some(1));
        assert_eq!(t.remove("a1"), None, "taken once");
        assert!(
            t.insert("a".into(), "a4".into(), 6).is_ok(),
            "a taken item frees its place"
        );
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn an_item_is_taken_by_its_owner_only() {
        let mut t = table(2, 10);
        t.insert("a".into(), "q".into(), 1).unwrap();
        assert_eq!(t.remove_owned("b", "q"), None);
        assert_eq!(t.remove_owned("a", "nope"), None);
        assert_eq!(t.remove_owned("a", "q"), Some(1));
    }

    #[test]
    fn an_owner_is_dropped_whole_and_stale_items_give_their_places_back() {
        let mut t = table(2, 10);
        t.insert("a".into(), "1".into(), 1).unwrap();
        t.insert("a".into(), "2".into(), 2).unwrap();
        t.insert("b".into(), "3".into(), 3).unwrap();
        t.purge("a", |v| *v == 1);
        assert_eq!(t.len(), 2);
        assert!(t.has_room("a"));
        t.drop_owner("a");
        assert_eq!(t.len(), 1);
        t.insert("a".into(), "4".into(), 4).unwrap();
        t.insert("a".into(), "5".into(), 5).unwrap();
        assert!(!t.has_room("a"));
        assert!(t.has_room("b"));
    }
}
