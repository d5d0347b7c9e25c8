//! Unit tests of the analyzer and the ranking rules.
