//! The scriptable raw HTTP/1.1 upstream (the `fake-upstream` crate), and the proxy's
//! configuration of an upstream at its URL.

#![allow(dead_code, unused_imports)]

use std::time::Duration;

pub use ::fake_upstream::*;

pub fn cfg(label: &str, url: &str, timeout: Duration) -> mcp_search_proxy::config::UpstreamConfig {
    let mut c = super::common::upstream_config(label, url);
    c.timeout = timeout;
    c
}
