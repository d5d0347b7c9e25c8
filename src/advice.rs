//! What a model or an operator reads about a failed upstream exchange: the one place that
//! names a setting to change (`UPSTREAM_CA_FILE`, `HTTPS_PROXY`/`HTTP_PROXY`, `NO_PROXY`,
//! `ELICITATION_TIMEOUT_SEC`). The HTTP client says what went wrong on the wire
//! (`upstream_http::WireError`), the actors what it means for the call
//! (`proxy_actors::upstream::UpstreamError`); the words that tell someone what to do are the
//! service's, written here at its edge: [`advice`] for a failed call's result and
//! [`describe`] for the error's text where it is reported (a call's result, the refresh
//! report, `/readyz`).

use proxy_actors::upstream::{CancelReason, UpstreamError};
use upstream_http::egress::EgressError;
use upstream_http::WireError;

/// The error's text, with the setting that fixes it where one does: a certificate no trusted
/// CA signed names `UPSTREAM_CA_FILE`.
pub fn describe(e: &UpstreamError) -> String {
    match e {
        UpstreamError::Wire(WireError::CertificateNotTrusted { .. }) => {
            format!("{e}; if a private CA signed it, set UPSTREAM_CA_FILE to the PEM of the CA that signed it")
        }
        _ => e.to_string(),
    }
}

/// A one-line advice for the caller: whether retrying can help, and what to do instead.
pub fn advice(e: &UpstreamError) -> &'static str {
    match e {
        UpstreamError::Wire(w) => wire_advice(w),
        UpstreamError::InputRequired { .. } => {
            "this tool asks the user or the model for input while it runs, and this client cannot be asked: a 2025-era client needs a session (initialize) that declared the capability and must accept text/event-stream; a 2026-07-28 client must declare it in _meta clientCapabilities. Otherwise give the tool everything it needs in its arguments, or use another tool"
        }
        UpstreamError::Unanswered { .. } => {
            "the tool's question to the client got no usable answer, so the call ended; answer it (the client's elicitation/sampling/roots handler) and call again"
        }
        UpstreamError::Unavailable => "the proxy is shutting down; retry against a running instance",
        UpstreamError::Cancelled(CancelReason::ClientGone) => "the call was cancelled because the client went away",
        UpstreamError::Cancelled(CancelReason::ShuttingDown) => {
            "the proxy is shutting down; retry against a running instance"
        }
        UpstreamError::Cancelled(CancelReason::Unanswered) => {
            "the call waited for the client's answer longer than ELICITATION_TIMEOUT_SEC; call the tool again and answer its question in time"
        }
    }
}

fn wire_advice(e: &WireError) -> &'static str {
    match e {
        WireError::Timeout { .. } => {
            "the upstream may still be working or overloaded; retry later or with a smaller request"
        }
        WireError::Connect(_) => "the upstream is down or unreachable; retry later, or ask the operator to check it",
        WireError::CertificateNotTrusted { .. } => {
            "retrying will not help: the operator must make the proxy trust the CA that signed the upstream's certificate (UPSTREAM_CA_FILE), or fix the upstream's certificate chain"
        }
        WireError::CertificateNameMismatch { .. } => {
            "the upstream's TLS certificate is for another host name; retrying will not help: the operator must use the host name the certificate names in the upstream's URL, or reissue the certificate for this name"
        }
        WireError::Tls { .. } => {
            "the TLS handshake with the upstream failed; retrying will probably not help: the operator must check the upstream's certificate (expiry) and TLS setup, and that the URL's port speaks TLS"
        }
        WireError::Proxy(EgressError::Unreachable { .. }) => {
            "the egress proxy is unreachable; retry later, or ask the operator to check HTTPS_PROXY/HTTP_PROXY"
        }
        WireError::Proxy(EgressError::Refused { status: 407, .. }) => {
            "the egress proxy wants credentials; retrying will not help: the operator must put user:password in the proxy URL (HTTPS_PROXY/HTTP_PROXY)"
        }
        WireError::Proxy(EgressError::Refused { status, .. }) if *status >= 500 => {
            "the egress proxy could not reach the upstream; retrying later may help, otherwise the operator must check the upstream's address or the proxy"
        }
        WireError::Proxy(EgressError::Refused { .. }) => {
            "the egress proxy refused the tunnel to this upstream; retrying will not help: the operator must allow the upstream at the proxy, or list its host in NO_PROXY if it is reachable directly"
        }
        WireError::Proxy(EgressError::BadReply { .. }) => {
            "the egress proxy did not answer CONNECT like an HTTP proxy; the operator must check HTTPS_PROXY/HTTP_PROXY (an http:// proxy URL)"
        }
        WireError::Http { status, .. } if *status == 401 || *status == 403 => {
            "the upstream rejected the proxy's credentials; retrying will not help, the operator must fix the token"
        }
        WireError::Http { status, .. } if *status >= 500 || *status == 429 => {
            "the upstream failed on its side; retrying later may help"
        }
        WireError::Http { .. } => "the upstream refused the request; retrying the same request will not help",
        WireError::Redirect { .. } => {
            "the upstream's URL redirects, and redirects are never followed (they could replay the request and its credentials elsewhere); retrying will not help: the operator must configure the final URL"
        }
        WireError::Rpc(_) => {
            "the upstream reported an error for this request; fix the request rather than retrying it unchanged"
        }
        WireError::InvalidReply(_) => {
            "the upstream misbehaved; retrying will probably not help, report it to the operator"
        }
        WireError::TooLarge { .. } => {
            "ask for less data (filters, paging, smaller ranges); retrying unchanged will fail again"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_certificate_names_the_setting_that_trusts_its_ca() {
        let e = UpstreamError::Wire(WireError::CertificateNotTrusted {
            host: "sec.example".into(),
            detail: "UnknownIssuer".into(),
        });
        assert_eq!(
            describe(&e),
            "TLS with upstream sec.example failed: certificate not trusted (UnknownIssuer); if a private CA signed it, set UPSTREAM_CA_FILE to the PEM of the CA that signed it"
        );
        assert!(advice(&e).contains("UPSTREAM_CA_FILE"));
        assert!(
            !e.to_string().contains("UPSTREAM_CA_FILE"),
            "the actors' text names no setting"
        );
    }

    #[test]
    fn settings_are_named_only_where_they_fix_the_failure() {
        let proxy = |status| {
            UpstreamError::Wire(WireError::Proxy(EgressError::Refused {
                proxy: "p:3128".into(),
                status,
                reason: String::new(),
            }))
        };
        assert!(advice(&proxy(407)).contains("HTTPS_PROXY/HTTP_PROXY"));
        assert!(advice(&proxy(403)).contains("NO_PROXY"));
        assert!(advice(&UpstreamError::Cancelled(CancelReason::Unanswered)).contains("ELICITATION_TIMEOUT_SEC"));
        let redirect = UpstreamError::Wire(WireError::Redirect {
            status: 307,
            location_host: Some("other.example".into()),
        });
        assert!(advice(&redirect).contains("final URL"));
        assert_eq!(describe(&redirect), redirect.to_string());
        for e in [
            UpstreamError::Unavailable,
            UpstreamError::InputRequired { methods: vec![] },
            UpstreamError::Wire(WireError::Connect("refused".into())),
        ] {
            let text = format!("{} {}", describe(&e), advice(&e));
            assert!(!text.contains("_PROXY") && !text.contains("_FILE"), "{text}");
        }
    }
}
