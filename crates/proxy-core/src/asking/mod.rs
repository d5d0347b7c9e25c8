//! Asking: the questions a tool asks its caller while it runs (elicitation, sampling, roots),
//! as pure data and rules. The runtime that carries them (the upstream actor's hand-over, the
//! desk that holds what waits on a client, the driver of a 2025-era client's stream) is
//! `proxy_actors::asking`; the wire grammar (`Askable`, the `inputRequests` shape) is
//! `mcp_wire::asks`.
//!
//! One [`Question`] (a [`Method`] and its params, passed on unchanged) ends as one [`Answer`]:
//! the client's result or error, a [`Decline`] of the proxy's own, a timeout, or the client
//! gone. How it travels depends on the era pair:
//!
//! | client \ upstream | 2025 (request on the call's stream) | 2026-07-28 (`input_required` round) |
//! |---|---|---|
//! | **2025** (SSE stream of its call) | relayed on the client's stream, answered under the upstream's id ([`upstream_response`]) | each question of the [`Round`] relayed on the stream; the call retried with the [`RoundAnswers`] |
//! | **2026-07-28** (rounds) | the call is held; its questions become the client's round ([`input_requests`]); the retry answers them ([`answer_in_retry`]) | the round passed through, its state sealed (`request_state`); the retry's answers go to the upstream as they came |
//!
//! # Layout
//! - `question.rs`: [`Question`], [`Method`], [`Keyed`], [`Answer`], [`Decline`] (the texts and
//!   codes the upstream is told).
//! - `eras.rs`: the era translations: [`UpstreamRequest`] and [`upstream_response`] (a 2025
//!   upstream), [`upstream_meta`], [`Round::read`] (the one parse of a round) and
//!   [`RoundAnswers`] (a 2026-07-28 upstream), [`input_requests`] and [`answer_in_retry`] (a
//!   2026-07-28 client), [`Withdrawal`] (a 2025-era client).
//! - `sealed.rs`: a 2026-07-28 client's side of a round: the `requestState` the proxy seals
//!   ([`seal`], [`seal_passed`]) for the call ([`CallKey`]), and what its [`Retry`] continues
//!   ([`open`] → [`Opened`]).
//! - `bounds.rs`: the bounds ([`MAX_QUESTIONS`], [`MAX_UNANSWERED`], [`MAX_ROUNDS`],
//!   [`MAX_HELD_TOTAL`]) and [`Bounded`], the one table under a per-owner and a total bound.
//! - `timeouts.rs`: [`Timeouts`], the one owner of the question timeout and its graces.

mod bounds;
mod eras;
mod question;
mod sealed;
mod timeouts;

pub use bounds::{Bounded, Limits, EMPTY_ROUND_PAUSE, MAX_HELD_TOTAL, MAX_QUESTIONS, MAX_ROUNDS, MAX_UNANSWERED};
pub use eras::{
    answer_in_retry, input_requests, upstream_meta, upstream_response, Round, RoundAnswers, StateTooLong, Unanswered,
    UpstreamRequest, Withdrawal, LEGACY_LOG_LEVEL,
};
pub use question::{Answer, Decline, Keyed, Method, Question, REQUEST_TIMED_OUT};
pub use sealed::{open, seal, seal_passed, CallKey, Opened, Retry};
pub use timeouts::{Timeouts, ASK_GRACE, DEFAULT_QUESTION_TIMEOUT, EXPIRY_GRACE};
