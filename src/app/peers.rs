//! What the application talks to for a call: the catalog (a refresh) and the upstreams (a
//! [`CallTool`]). In the running proxy these are the actors ([`Actors`]); the unit tests of
//! [`App`](super::App) put small fakes in their place.
//!
//! A generic seam, not `dyn` or `Recipient`: `Actors` hands out `Addr::send`'s future as it
//! is (no boxing, no clone of a boxed recipient on the relay path).

use std::collections::HashMap;
use std::future::Future;

use actix::{Addr, MailboxError};

use proxy_actors::catalog::{CatalogActor, Refresh, RefreshFailure, RefreshReport};
use proxy_actors::upstream::{CallTool, Called, UpstreamActor, UpstreamError};

/// What an upstream's actor answers a [`CallTool`] with (the outer error: the actor is gone).
pub type CallReply = Result<Result<Called, UpstreamError>, MailboxError>;

/// What the catalog answers a [`Refresh`] with (the outer error: the actor is gone).
pub type Refreshed = Result<Result<RefreshReport, RefreshFailure>, MailboxError>;

/// The catalog and the upstreams, as the application reaches them.
pub trait Peers: 'static {
    /// How one upstream is reached.
    type Upstream: Clone + 'static;

    /// The upstream labelled `label` (the catalog routes a tool to its upstream's label).
    fn upstream(&self, label: &str) -> Option<Self::Upstream>;

    /// Sends one call to an upstream; the future outlives the application's borrow (a
    /// 2026-07-28 client's call may run as a task, see the module docs of `app`).
    fn call(upstream: Self::Upstream, call: CallTool) -> impl Future<Output = CallReply> + 'static;

    /// Asks the catalog to re-list its upstreams (or to say why it did not).
    fn refresh(&self, refresh: Refresh) -> impl Future<Output = Refreshed> + 'static;
}

/// The running proxy's peers: the catalog actor and one actor per upstream.
pub struct Actors {
    pub catalog: Addr<CatalogActor>,
    /// Upstream actors by label.
    pub upstreams: HashMap<String, Addr<UpstreamActor>>,
}

impl Peers for Actors {
    type Upstream = Addr<UpstreamActor>;

    fn upstream(&self, label: &str) -> Option<Addr<UpstreamActor>> {
        self.upstreams.get(label).cloned()
    }

    fn call(upstream: Addr<UpstreamActor>, call: CallTool) -> impl Future<Output = CallReply> + 'static {
        upstream.send(call)
    }

    fn refresh(&self, refresh: Refresh) -> impl Future<Output = Refreshed> + 'static {
        self.catalog.send(refresh)
    }
}
