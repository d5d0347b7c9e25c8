//! proxy-actors: the actors, wire types and search index of mcp-search-proxy.

pub mod args;
pub mod catalog;
pub mod catalog_file;
pub mod mcp;
pub mod memory;
pub mod model;
pub mod policy;
pub mod redact;
pub mod search;
pub mod upstream;
