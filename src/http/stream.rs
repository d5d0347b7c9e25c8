//! How answers leave: one JSON body, one SSE event, or an SSE stream of the notifications an
//! upstream sends while a call runs (progress), then the result. A tool's question to a
//! 2025-era client goes on that same stream, framed here ([`CallStream`]).

use std::future::Future;
use std::time::Duration;

use actix_web::http::header;
use actix_web::HttpResponse;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use mcp_wire::{jsonrpc, sse};
use proxy_actors::asking::{ClientStream, Closed};
use proxy_core::asking::{Question, Withdrawal};

use super::checks::Accepts;

/// A JSON-RPC message (already serialised) as JSON when the client accepts it (or said
/// nothing), else as a one-event SSE stream.
pub fn reply(accepts: Accepts, text: String) -> HttpResponse {
    if accepts.json {
        return HttpResponse::Ok().content_type("application/json").body(text);
    }
    sse_response().body(sse::encode_event(&text, None))
}

/// Streams the notifications `rx` receives as SSE events while `call` runs, then the message
/// (serialized) `call` resolves to. The call runs inside the response stream: a client that
/// disconnects drops it (and whatever it holds, such as the handle that cancels an upstream
/// call). While nothing else is sent, an SSE comment goes out every `keepalive`: it keeps
/// intermediaries with an idle timeout from cutting a stream that waits on a person (a tool's
/// question), and it is how a client that went away is noticed (the write fails) before the
/// call ends of itself.
pub fn notifications_then<F>(call: F, rx: mpsc::Receiver<Value>, keepalive: Duration) -> HttpResponse
where
    F: Future<Output = String> + Unpin + 'static,
{
    enum Phase<F> {
        Running(F, mpsc::Receiver<Value>),
        Done,
    }
    let events = futures_util::stream::unfold(Phase::Running(call, rx), move |phase| async move {
        let Phase::Running(mut call, mut rx) = phase else {
            return None;
        };
        tokio::select! {
            biased;
            Some(note) = rx.recv() => {
                let text = sse::encode_event(&note.to_string(), None);
                Some((Ok::<_, actix_web::Error>(Bytes::from(text)), Phase::Running(call, rx)))
            }
            response = &mut call => {
                // Flush notifications that raced the result, then the result itself.
                let mut text = String::new();
                while let Ok(note) = rx.try_recv() {
                    text.push_str(&sse::encode_event(&note.to_string(), None));
                }
                text.push_str(&sse::encode_event(&response, None));
                Some((Ok(Bytes::from(text)), Phase::Done))
            }
            () = tokio::time::sleep(keepalive) => {
                Some((Ok(Bytes::from_static(KEEPALIVE_COMMENT)), Phase::Running(call, rx)))
            }
        }
    });
    sse_response().streaming(events)
}

/// The SSE comment sent while a stream is otherwise quiet (clients ignore comments).
const KEEPALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

fn sse_response() -> actix_web::HttpResponseBuilder {
    let mut b = HttpResponse::Ok();
    b.content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"));
    b
}

/// A call's stream, as its questions reach a 2025-era client: each a JSON-RPC request under
/// the proxy-owned id, on the same channel as the call's notifications (so they keep their
/// order); a withdrawal is a `notifications/cancelled`.
pub struct CallStream(pub mpsc::Sender<Value>);

impl ClientStream for CallStream {
    fn put(&self, id: &str, question: Question) -> impl Future<Output = Result<(), Closed>> {
        let mut request = Map::new();
        request.insert("jsonrpc".into(), json!("2.0"));
        request.insert("id".into(), json!(id));
        request.insert("method".into(), json!(question.method.as_str()));
        if let Some(p) = question.params {
            request.insert("params".into(), p);
        }
        let send = self.0.send(Value::Object(request));
        async move { send.await.map_err(|_| Closed) }
    }

    fn withdraw(&self, id: &str, why: Withdrawal) {
        let note = jsonrpc::notification(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": why.reason()})),
        );
        let _ = self.0.try_send(note);
    }
}
