//! Retrieval telemetry: does the search lead to the call? For each client the proxy remembers
//! the names its last `mcp_search` returned (per query, at most the limit asked for) and how
//! many searches it made since its last `mcp_call`; each `mcp_call` is then counted by the
//! called tool's rank in those results (1, 2, 3, 4-5, 6-10, 11+, `miss`) or as `no_search`
//! when the client never searched, and the number of searches since its previous call is
//! observed (`mcp_proxy_retrieval_searches_per_call`; 0 = a call without a search in between).
//!
//! Who "the client" is: its legacy `Mcp-Session-Id` when it sends one (2025-era clients), else
//! its token's group (`PROXY_TOKENS`), else one shared anonymous entry. Stateless 2026-era
//! clients of one token group therefore share one memory: exact for one client per token (the
//! usual deployment), approximate when several clients share a token or no token is
//! configured. Only tool names and counts are kept, never arguments or queries; at most
//! [`MAX_CLIENTS`] clients are remembered, the least recently active forgotten first.
//!
//! The memory is owned by one actor ([`RetrievalTracker`]); the application tells it what happened with
//! fire-and-forget messages (a search before a call from the same client is always delivered
//! first: the client saw the search's reply before it sent the call), and it records into the
//! process's [`Metrics`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use actix::prelude::*;

use proxy_metrics::{Metrics, RankBucket};

/// Clients remembered at once.
pub const MAX_CLIENTS: usize = 10_000;

/// Names kept per query of a search (a search's `limit` is smaller anyway).
pub const MAX_NAMES_PER_QUERY: usize = 50;
/// Queries kept per search (`mcp_search` takes at most 7).
pub const MAX_QUERIES: usize = 7;

/// Who made a request, for retrieval telemetry (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientKey {
    Session(String),
    Group(String),
    Anonymous,
}

impl ClientKey {
    /// The key of a request: its legacy session id, else its token group.
    pub fn of(session: Option<&str>, group: Option<&str>) -> ClientKey {
        match (session, group) {
            (Some(s), _) => ClientKey::Session(s.to_string()),
            (None, Some(g)) => ClientKey::Group(g.to_string()),
            (None, None) => ClientKey::Anonymous,
        }
    }
}

/// What one client did lately.
#[derive(Debug, Default)]
struct Recent {
    /// The last search's result names, per query; `None` before any search.
    last_hits: Option<Vec<Vec<String>>>,
    /// Searches since the last call.
    searches_since_call: u32,
    /// When it was last active (the memory's clock), for forgetting the least active.
    touched: u64,
}

/// How one call looked against its client's last search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSeen {
    pub rank: RankBucket,
    /// Searches the client made since its previous call.
    pub searches_before: u32,
}

/// The bounded memory of recent searches per client (pure; the actor owns it).
#[derive(Debug)]
pub struct RetrievalMemory {
    clients: HashMap<ClientKey, Recent>,
    /// Activity order: (key, clock at the time); entries whose clock no longer matches the
    /// client's `touched` are stale and skipped.
    order: VecDeque<(ClientKey, u64)>,
    clock: u64,
    cap: usize,
}

impl Default for RetrievalMemory {
    fn default() -> Self {
        RetrievalMemory::with_capacity(MAX_CLIENTS)
    }
}

impl RetrievalMemory {
    pub fn with_capacity(cap: usize) -> RetrievalMemory {
        RetrievalMemory {
            clients: HashMap::new(),
            order: VecDeque::new(),
            clock: 0,
            cap: cap.max(1),
        }
    }

    /// A search answered `hits` (per query) for `key`; at most [`MAX_QUERIES`] queries of
    /// [`MAX_NAMES_PER_QUERY`] names each are kept.
    pub fn searched(&mut self, key: ClientKey, mut hits: Vec<Vec<String>>) {
        hits.truncate(MAX_QUERIES);
        for names in &mut hits {
            names.truncate(MAX_NAMES_PER_QUERY);
        }
        let r = self.touch(key);
        r.last_hits = Some(hits);
        r.searches_since_call = r.searches_since_call.saturating_add(1);
    }

    /// `key` called `tool` (the catalog's name when it resolved, else as asked).
    pub fn called(&mut self, key: ClientKey, tool: &str) -> CallSeen {
        let r = self.touch(key);
        let rank = match &r.last_hits {
            None => RankBucket::NoSearch,
            Some(queries) => queries
                .iter()
                .filter_map(|names| names.iter().position(|n| n == tool))
                .min()
                .map_or(RankBucket::Miss, |i| RankBucket::Rank(i + 1)),
        };
        let seen = CallSeen {
            rank,
            searches_before: r.searches_since_call,
        };
        r.searches_since_call = 0;
        seen
    }

    /// Clients remembered now.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// The client's entry, marked active; the least recently active is forgotten when a new
    /// client would exceed the capacity.
    fn touch(&mut self, key: ClientKey) -> &mut Recent {
        self.clock += 1;
        let clock = self.clock;
        if !self.clients.contains_key(&key) {
            while self.clients.len() >= self.cap {
                let Some((old, at)) = self.order.pop_front() else {
                    break;
                };
                if self.clients.get(&old).is_some_and(|r| r.touched == at) {
                    self.clients.remove(&old);
                }
            }
        }
        self.order.push_back((key.clone(), clock));
        // Stale order entries pile up with activity: rebuild once they dominate.
        if self.order.len() > 4 * self.cap.max(self.clients.len() + 1) {
            let clients = &self.clients;
            self.order
                .retain(|(k, at)| clients.get(k).is_some_and(|r| r.touched == *at));
        }
        let r = self.clients.entry(key).or_default();
        r.touched = clock;
        r
    }
}

/// The actor that owns the [`RetrievalMemory`] and records what it sees.
pub struct RetrievalTracker {
    memory: RetrievalMemory,
    metrics: Arc<Metrics>,
}

impl RetrievalTracker {
    pub fn new(metrics: Arc<Metrics>) -> RetrievalTracker {
        RetrievalTracker {
            memory: RetrievalMemory::default(),
            metrics,
        }
    }
}

impl Actor for RetrievalTracker {
    type Context = Context<Self>;
}

/// A client's `mcp_search` answered with these names, per query.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Searched {
    pub client: ClientKey,
    pub hits: Vec<Vec<String>>,
}

/// A client's `mcp_call` of `tool`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Called {
    pub client: ClientKey,
    pub tool: String,
}

impl Handler<Searched> for RetrievalTracker {
    type Result = ();

    fn handle(&mut self, msg: Searched, _: &mut Self::Context) {
        self.memory.searched(msg.client, msg.hits);
    }
}

impl Handler<Called> for RetrievalTracker {
    type Result = ();

    fn handle(&mut self, msg: Called, _: &mut Self::Context) {
        let seen = self.memory.called(msg.client, &msg.tool);
        self.metrics.retrieval(seen.rank, seen.searches_before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn calls_are_ranked_against_the_last_search() {
        let mut m = RetrievalMemory::default();
        let me = ClientKey::of(Some("s1"), Some("team"));
        assert_eq!(
            m.called(me.clone(), "a"),
            CallSeen {
                rank: RankBucket::NoSearch,
                searches_before: 0
            }
        );
        m.searched(me.clone(), vec![names(&["x", "y"])]);
        m.searched(me.clone(), vec![names(&["a", "b", "c", "d"]), names(&["z", "d"])]);
        let seen = m.called(me.clone(), "d");
        assert_eq!(seen.rank, RankBucket::Rank(2), "the best rank over the queries");
        assert_eq!(seen.searches_before, 2);
        // A second call compares with the same (last) search; no search in between.
        assert_eq!(
            m.called(me.clone(), "q"),
            CallSeen {
                rank: RankBucket::Miss,
                searches_before: 0
            }
        );
        // Another client has its own memory.
        let other = ClientKey::of(None, Some("team"));
        assert_eq!(m.called(other, "a").rank, RankBucket::NoSearch);
        assert_eq!(ClientKey::of(None, None), ClientKey::Anonymous);
    }

    #[test]
    fn the_least_recently_active_client_is_forgotten() {
        let mut m = RetrievalMemory::with_capacity(2);
        let k = |i: u32| ClientKey::Session(format!("s{i}"));
        m.searched(k(1), vec![names(&["a"])]);
        m.searched(k(2), vec![names(&["a"])]);
        m.searched(k(1), vec![names(&["a"])]); // 1 is now the most recent
        m.searched(k(3), vec![names(&["a"])]); // 2 goes
        assert_eq!(m.len(), 2);
        assert_eq!(m.called(k(1), "a").rank, RankBucket::Rank(1));
        assert_eq!(m.called(k(3), "a").rank, RankBucket::Rank(1));
        assert_eq!(m.called(k(2), "a").rank, RankBucket::NoSearch, "forgotten");
        for i in 0..1000 {
            m.searched(k(i % 5), vec![]);
        }
        assert!(m.len() <= 2);
        assert!(m.order.len() <= 4 * 3 + 1, "stale order entries are dropped");
    }
}
