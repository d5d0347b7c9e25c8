//! Configuration from environment variables (names compatible with the original design).
//!
//! One constant per variable; [`Config::from_lookup`] is pure (it takes a lookup function),
//! so every rule is unit-tested without touching the process environment. `main` exits with
//! code 64 (EX_USAGE) and a message naming the variable before any port is bound.

use std::path::PathBuf;
use std::time::Duration;

pub const UPSTREAMS: &str = "UPSTREAMS";
pub const UPSTREAM_URLS: &str = "UPSTREAM_URLS";
pub const UPSTREAM_TOKENS: &str = "UPSTREAM_TOKENS";
pub const LITELLM_MASTER_KEY: &str = "LITELLM_MASTER_KEY";
pub const UPSTREAM_TIMEOUT_SEC: &str = "UPSTREAM_TIMEOUT_SEC";
pub const UPSTREAM_TIMEOUT_A11Y: &str = "UPSTREAM_TIMEOUT_A11Y";
pub const CATALOG_TTL_SEC: &str = "CATALOG_TTL_SEC";
pub const MANIFEST_PATH: &str = "MANIFEST_PATH";
pub const PORT: &str = "PORT";
pub const BIND_ADDR: &str = "BIND_ADDR";
pub const ALLOWED_ORIGINS: &str = "ALLOWED_ORIGINS";
pub const MAX_BODY_BYTES: &str = "MAX_BODY_BYTES";
pub const MAX_RESULT_BYTES: &str = "MAX_RESULT_BYTES";
pub const LOG_LEVEL: &str = "LOG_LEVEL";
pub const LOG_FORMAT: &str = "LOG_FORMAT";
pub const TOOLS_ALLOW: &str = "TOOLS_ALLOW";
pub const TOOLS_DENY: &str = "TOOLS_DENY";
pub const READ_ONLY: &str = "READ_ONLY";
pub const PINNED_TOOLS: &str = "PINNED_TOOLS";
pub const LISTING_MAX_CHARS: &str = "LISTING_MAX_CHARS";
pub const PROXY_TOKENS: &str = "PROXY_TOKENS";
pub const PROXY_TOKENS_FILE: &str = "PROXY_TOKENS_FILE";
pub const ALLOW_UNAUTHENTICATED: &str = "ALLOW_UNAUTHENTICATED";
pub const BODY_TIMEOUT_SEC: &str = "BODY_TIMEOUT_SEC";
pub const MAX_CONNECTIONS: &str = "MAX_CONNECTIONS";
pub const SHUTDOWN_GRACE_SEC: &str = "SHUTDOWN_GRACE_SEC";
pub const REFRESH_MIN_INTERVAL_SEC: &str = "REFRESH_MIN_INTERVAL_SEC";
pub const METRICS_PUBLIC: &str = "METRICS_PUBLIC";
/// A PEM file of CA certificates trusted for `https://` upstreams, besides the platform's.
pub const UPSTREAM_CA_FILE: &str = "UPSTREAM_CA_FILE";
// HTTPS_PROXY / HTTP_PROXY / NO_PROXY (and their lower-case forms): see
// `upstream_http::egress`, which owns their names and rules.
pub const EMBED_MODEL: &str = "EMBED_MODEL";
/// How long a tool's question (elicitation, sampling, roots) waits for the client's answer.
pub const ELICITATION_TIMEOUT_SEC: &str = "ELICITATION_TIMEOUT_SEC";
/// Questions one client may have waiting at once (a 2025-era session's, or a 2026-07-28
/// client group's held calls).
pub const MAX_PENDING_QUESTIONS: &str = "MAX_PENDING_QUESTIONS";
/// The key that seals a 2026-07-28 `requestState` (shared by instances that resume each
/// other's rounds); a random key per process when unset.
pub const REQUEST_STATE_SECRET: &str = "REQUEST_STATE_SECRET";
/// Seconds of silence after which a streamed call sends an SSE keep-alive comment.
pub const SSE_KEEPALIVE_SEC: &str = "SSE_KEEPALIVE_SEC";

pub const DEFAULT_PORT: u16 = 8092;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_A11Y_TIMEOUT: Duration = Duration::from_secs(280);
pub const DEFAULT_TTL: Duration = Duration::from_secs(1800);
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
pub const DEFAULT_MAX_RESULT: usize = 16 * 1024 * 1024;
pub const DEFAULT_LISTING_MAX_CHARS: usize = 6000;
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = proxy_core::asking::DEFAULT_QUESTION_TIMEOUT;
pub const DEFAULT_MAX_PENDING_QUESTIONS: usize = 16;
/// Under the common 30-60 s idle timeouts of reverse proxies and load balancers.
pub const DEFAULT_SSE_KEEPALIVE: Duration = Duration::from_secs(15);
/// A `REQUEST_STATE_SECRET` shorter than this is refused (a guessable key seals nothing).
pub const MIN_STATE_SECRET_CHARS: usize = 32;
/// Client tokens shorter than this are refused (a guessable token is no protection).
pub const MIN_CLIENT_TOKEN_CHARS: usize = 16;

/// One inbound bearer token and the client group it names (for logs; never the token).
#[derive(Clone, PartialEq, Eq)]
pub struct ClientToken {
    pub group: String,
    pub token: String,
}

impl std::fmt::Debug for ClientToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientToken")
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

/// One upstream as configured.
#[derive(Clone, PartialEq, Eq)]
pub struct UpstreamConfig {
    pub label: String,
    pub url: String,
    pub token: Option<String>,
    pub timeout: Duration,
}

impl std::fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        f.debug_struct("UpstreamConfig")
            .field("label", &self.label)
            .field("url", &self.url)
            .field("auth", &self.token.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

/// The whole service configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub upstreams: Vec<UpstreamConfig>,
    pub catalog_ttl: Option<Duration>,
    pub manifest_path: Option<PathBuf>,
    pub bind_addr: String,
    pub port: u16,
    /// Extra allowed `Origin` values (exact, lower-cased); loopback origins are always allowed.
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    pub max_result_bytes: usize,
    pub log_level: log::LevelFilter,
    pub log_format: LogFormat,
    /// Which tools are served and which are pinned into `tools/list`.
    pub policy: proxy_core::policy::Policy,
    /// Budget of the tier-1 listing in `instructions`.
    pub listing_max_chars: usize,
    /// Bearer tokens clients must present on `/mcp` (empty: no authentication).
    pub client_tokens: Vec<ClientToken>,
    /// Serve without client tokens on a non-loopback address (said at start with a WARN).
    pub allow_unauthenticated: bool,
    /// Longest a client may take to send a request body once its headers arrived.
    pub body_timeout: Duration,
    /// Most client connections held at once (further ones wait in the listen backlog).
    pub max_connections: usize,
    /// How long calls in flight may finish at shutdown before they are answered with an error.
    pub shutdown_grace: Duration,
    /// At most one client- or upstream-triggered catalog fan-out per this period (0 = off).
    pub refresh_min_interval: Duration,
    /// `GET /metrics` without a client token even when `PROXY_TOKENS` is set.
    pub metrics_public: bool,
    /// `UPSTREAM_CA_FILE`, read and checked: trusted for upstreams besides the platform's roots.
    pub upstream_ca: Option<upstream_http::tls::CaFile>,
    /// Egress proxies for upstream connections (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`).
    pub egress: upstream_http::egress::Egress,
    /// The sentence-embedding model's directory (`EMBED_MODEL`): enables the semantic arm of
    /// the search. Not checked here: a model that cannot be loaded leaves the service running
    /// lexical-only, said once with a WARN (see `proxy_actors::embedding`). The binary fills
    /// it with [`installed_model`] when the variable is not set at all.
    pub embed_model: Option<PathBuf>,
    /// Tools that ask their caller something (see [`Asking`]).
    pub asking: Asking,
    /// `SSE_KEEPALIVE_SEC`: a streamed call sends an SSE comment after this much silence.
    pub sse_keepalive: Duration,
}

/// How the questions tools ask their caller are handled.
#[derive(Clone, PartialEq, Eq)]
pub struct Asking {
    /// `ELICITATION_TIMEOUT_SEC`: how long a question waits for the client's answer.
    pub timeout: Duration,
    /// `MAX_PENDING_QUESTIONS`: questions one client may have waiting at once.
    pub max_pending: usize,
    /// `REQUEST_STATE_SECRET`; never logged.
    pub state_secret: Option<String>,
}

impl Default for Asking {
    fn default() -> Self {
        Asking {
            timeout: DEFAULT_ELICITATION_TIMEOUT,
            max_pending: DEFAULT_MAX_PENDING_QUESTIONS,
            state_secret: None,
        }
    }
}

impl std::fmt::Debug for Asking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asking")
            .field("timeout", &self.timeout)
            .field("max_pending", &self.max_pending)
            .field("state_secret", &self.state_secret.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Where `scripts/fetch-model.sh` installs the model, relative to a checkout or an install.
pub const INSTALLED_MODEL: &str = "models/all-MiniLM-L6-v2";

/// The model the binary uses when `EMBED_MODEL` is not set at all (`raw`: the variable as the
/// environment has it, untrimmed; set but empty means lexical only, as the Compose file uses
/// it): the first of `<dir>/models/all-MiniLM-L6-v2` over `dirs` (the working directory, the
/// executable's directory and the checkout two levels above it, where `cargo run` puts the
/// binary) that holds a `model.safetensors`. `None` when there is none: lexical only.
pub fn installed_model(raw: Option<&std::ffi::OsStr>, dirs: &[PathBuf]) -> Option<PathBuf> {
    if raw.is_some() {
        return None;
    }
    dirs.iter()
        .map(|d| d.join(INSTALLED_MODEL))
        .find(|m| m.join("model.safetensors").is_file())
}

/// The directories [`installed_model`] looks in, for this process.
pub fn model_search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(PathBuf::from)) {
        if let Some(checkout) = exe_dir.parent().and_then(|p| p.parent()) {
            dirs.push(checkout.to_path_buf());
        }
        dirs.push(exe_dir);
    }
    dirs
}

/// A configuration error, naming the variable at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub var: &'static str,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid configuration: {}: {}", self.var, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn err(var: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        var,
        message: message.into(),
    }
}

impl Config {
    /// The defaults every variable has, for `upstreams`, on loopback (the demo's settings).
    pub fn for_upstreams(upstreams: Vec<UpstreamConfig>) -> Config {
        Config {
            upstreams,
            catalog_ttl: None,
            manifest_path: None,
            bind_addr: "127.0.0.1".into(),
            port: DEFAULT_PORT,
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY,
            max_result_bytes: DEFAULT_MAX_RESULT,
            log_level: log::LevelFilter::Info,
            log_format: LogFormat::Json,
            policy: Default::default(),
            listing_max_chars: DEFAULT_LISTING_MAX_CHARS,
            client_tokens: Vec::new(),
            allow_unauthenticated: false,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            refresh_min_interval: proxy_actors::catalog::DEFAULT_MIN_REFRESH_INTERVAL,
            metrics_public: false,
            upstream_ca: None,
            egress: Default::default(),
            embed_model: None,
            asking: Asking::default(),
            sse_keepalive: DEFAULT_SSE_KEEPALIVE,
        }
    }

    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(&|k| std::env::var(k).ok())
    }

    /// Builds the configuration from a variable lookup (empty values count as unset).
    ///
    /// Variables are checked in a fixed order and the first error is the one reported.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let upstreams = upstreams(&get)?;
        let catalog_ttl = match get(CATALOG_TTL_SEC) {
            None => Some(DEFAULT_TTL),
            Some(v) => Some(whole_seconds(CATALOG_TTL_SEC, &v)?).filter(|ttl| !ttl.is_zero()),
        };
        let port = parse_port(get(PORT))?;
        let client_tokens = client_tokens(get(PROXY_TOKENS), get(PROXY_TOKENS_FILE))?;
        let allow_unauthenticated = parse_bool(ALLOW_UNAUTHENTICATED, get(ALLOW_UNAUTHENTICATED))?;
        let bind_addr = bind_addr(get(BIND_ADDR), !client_tokens.is_empty() || allow_unauthenticated)?;
        let body_timeout = positive_seconds(&get, BODY_TIMEOUT_SEC, DEFAULT_BODY_TIMEOUT)?;
        let shutdown_grace = positive_seconds(&get, SHUTDOWN_GRACE_SEC, DEFAULT_SHUTDOWN_GRACE)?;
        let max_connections = positive_count(&get, MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS)?;
        let refresh_min_interval = match get(REFRESH_MIN_INTERVAL_SEC) {
            None => proxy_actors::catalog::DEFAULT_MIN_REFRESH_INTERVAL,
            Some(v) => whole_seconds(REFRESH_MIN_INTERVAL_SEC, &v)?,
        };
        let allowed_origins = get(ALLOWED_ORIGINS)
            .map(|v| {
                split_list(&v)
                    .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        let max_body_bytes = positive_count(&get, MAX_BODY_BYTES, DEFAULT_MAX_BODY)?;
        let max_result_bytes = positive_count(&get, MAX_RESULT_BYTES, DEFAULT_MAX_RESULT)?;
        let log_level = parse_log_level(get(LOG_LEVEL))?;
        let log_format = parse_log_format(get(LOG_FORMAT), LogFormat::Json)?;
        let read_only = parse_bool(READ_ONLY, get(READ_ONLY))?;
        let metrics_public = parse_bool(METRICS_PUBLIC, get(METRICS_PUBLIC))?;
        let policy = proxy_core::policy::Policy {
            allow: patterns(&get, TOOLS_ALLOW)?,
            deny: patterns(&get, TOOLS_DENY)?,
            read_only,
            pinned: patterns(&get, PINNED_TOOLS)?,
        };
        let listing_max_chars = positive_count(&get, LISTING_MAX_CHARS, DEFAULT_LISTING_MAX_CHARS)?;
        let upstream_ca = get(UPSTREAM_CA_FILE).map(|path| upstream_ca(&path)).transpose()?;
        // `Egress` owns the names and applies the lower-case-wins rule (empty = unset, as here).
        let egress =
            upstream_http::egress::Egress::from_lookup(&|k| get(k)).map_err(|e| err(e.var, e.error.to_string()))?;
        let state_secret = get(REQUEST_STATE_SECRET);
        if state_secret
            .as_ref()
            .is_some_and(|s| s.chars().count() < MIN_STATE_SECRET_CHARS)
        {
            return Err(err(
                REQUEST_STATE_SECRET,
                format!("must be at least {MIN_STATE_SECRET_CHARS} characters (a guessable key seals nothing)"),
            ));
        }
        let asking = Asking {
            timeout: positive_seconds(&get, ELICITATION_TIMEOUT_SEC, DEFAULT_ELICITATION_TIMEOUT)?,
            max_pending: positive_count(&get, MAX_PENDING_QUESTIONS, DEFAULT_MAX_PENDING_QUESTIONS)?,
            state_secret,
        };
        let sse_keepalive = positive_seconds(&get, SSE_KEEPALIVE_SEC, DEFAULT_SSE_KEEPALIVE)?;
        Ok(Config {
            sse_keepalive,
            asking,
            upstream_ca,
            egress,
            policy,
            listing_max_chars,
            upstreams,
            catalog_ttl,
            manifest_path: get(MANIFEST_PATH).map(PathBuf::from),
            bind_addr,
            port,
            allowed_origins,
            max_body_bytes,
            max_result_bytes,
            log_level,
            log_format,
            client_tokens,
            allow_unauthenticated,
            body_timeout,
            max_connections,
            shutdown_grace,
            refresh_min_interval,
            metrics_public,
            embed_model: get(EMBED_MODEL).map(PathBuf::from),
        })
    }
}

/// A variable lookup whose values are trimmed, empty ones counting as unset.
type Lookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// One entry of `UPSTREAMS` or `UPSTREAM_URLS`, before it is checked.
struct UpstreamEntry {
    /// The `label=` prefix, when given.
    label: Option<String>,
    url: String,
    token: Option<String>,
    /// The variable the entry came from (for errors).
    var: &'static str,
}

/// The upstreams: their list (`UPSTREAMS`, else `UPSTREAM_URLS` with `UPSTREAM_TOKENS`), each
/// checked and given its label, token (or the LiteLLM master key) and timeout.
fn upstreams(get: &Lookup) -> Result<Vec<UpstreamConfig>, ConfigError> {
    let timeout = positive_seconds(get, UPSTREAM_TIMEOUT_SEC, DEFAULT_TIMEOUT)?;
    let a11y_timeout = positive_seconds(get, UPSTREAM_TIMEOUT_A11Y, DEFAULT_A11Y_TIMEOUT)?;
    let master_key = get(LITELLM_MASTER_KEY);
    if let Some(k) = &master_key {
        check_header_token(LITELLM_MASTER_KEY, "the key", k)?;
    }
    let entries = upstream_entries(get)?;
    if entries.is_empty() {
        return Err(err(UPSTREAMS, "the list is empty"));
    }
    let mut upstreams: Vec<UpstreamConfig> = Vec::new();
    for (i, UpstreamEntry { label, url, token, var }) in entries.into_iter().enumerate() {
        validate_url(var, i, &url)?;
        if upstreams.iter().any(|u| u.url == url) {
            return Err(err(var, format!("{} is listed twice", proxy_core::redact::url(&url))));
        }
        if let Some(t) = &token {
            check_header_token(var, &format!("the token of entry {}", i + 1), t)?;
        }
        // The master key goes only where the host itself is a LiteLLM.
        let token = token.or_else(|| {
            if proxy_core::redact::host(&url).to_ascii_lowercase().contains("litellm") {
                master_key.clone()
            } else {
                None
            }
        });
        let timeout = if url.contains("a11y") { a11y_timeout } else { timeout };
        let label = unique_label(&upstreams, label.unwrap_or_else(|| derive_label(&url, i)));
        upstreams.push(UpstreamConfig {
            label,
            url,
            token,
            timeout,
        });
    }
    Ok(upstreams)
}

/// The entries of `UPSTREAMS` (`[label=]url[|token]`, comma-separated), or else of
/// `UPSTREAM_URLS` with the tokens of `UPSTREAM_TOKENS` by position; an error when neither is
/// set.
fn upstream_entries(get: &Lookup) -> Result<Vec<UpstreamEntry>, ConfigError> {
    if let Some(list) = get(UPSTREAMS) {
        return Ok(split_list(&list)
            .map(|entry| {
                let (url_part, token) = match entry.split_once('|') {
                    Some((u, t)) => (u.trim(), Some(t.trim().to_string()).filter(|t| !t.is_empty())),
                    None => (entry, None),
                };
                let (label, url) = split_label(url_part);
                UpstreamEntry {
                    label,
                    url: url.to_string(),
                    token,
                    var: UPSTREAMS,
                }
            })
            .collect());
    }
    if let Some(list) = get(UPSTREAM_URLS) {
        let tokens: Vec<String> = get(UPSTREAM_TOKENS)
            .map(|t| t.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default();
        return Ok(split_list(&list)
            .enumerate()
            .map(|(i, u)| {
                let (label, url) = split_label(u);
                UpstreamEntry {
                    label,
                    url: url.to_string(),
                    token: tokens.get(i).cloned().filter(|t| !t.is_empty()),
                    var: UPSTREAM_URLS,
                }
            })
            .collect());
    }
    Err(err(
        UPSTREAMS,
        "no upstream configured: set UPSTREAMS=url|token,... (or run `mcp-search-proxy demo`)",
    ))
}

/// `label`, or when an earlier upstream has it, `label2`, `label3`, … (the first one free).
fn unique_label(upstreams: &[UpstreamConfig], label: String) -> String {
    let taken = |label: &str| upstreams.iter().any(|u| u.label == label);
    if !taken(&label) {
        return label;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{label}{n}");
        if !taken(&candidate) {
            return candidate;
        }
        n += 1;
    }
}

/// `BIND_ADDR`, checked. Without client tokens (`open` false: no token and no
/// `ALLOW_UNAUTHENTICATED`) the proxy, which holds every upstream credential, defaults to and
/// must stay on loopback, reachable from this machine only.
fn bind_addr(v: Option<String>, open: bool) -> Result<String, ConfigError> {
    let bind_addr = v.unwrap_or_else(|| if open { "0.0.0.0" } else { "127.0.0.1" }.into());
    let loopback = bind_addr == "localhost" || bind_addr.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if bind_addr.parse::<std::net::IpAddr>().is_err() && bind_addr != "localhost" {
        return Err(err(BIND_ADDR, format!("{bind_addr:?} is not an IP address")));
    }
    if !loopback && !open {
        return Err(err(
            BIND_ADDR,
            format!(
                "{bind_addr} is reachable from other machines, but no client token is configured: set {PROXY_TOKENS} (or {PROXY_TOKENS_FILE}), or {ALLOW_UNAUTHENTICATED}=true if another layer authenticates clients"
            ),
        ));
    }
    Ok(bind_addr)
}

/// A list of tool glob patterns (`TOOLS_ALLOW`, `TOOLS_DENY`, `PINNED_TOOLS`); empty when unset.
fn patterns(get: &Lookup, var: &'static str) -> Result<Vec<String>, ConfigError> {
    let list: Vec<String> = get(var)
        .map(|v| split_list(&v).map(str::to_string).collect())
        .unwrap_or_default();
    for p in &list {
        let body = p.strip_prefix("source:").unwrap_or(p);
        if body.is_empty() || body.contains(char::is_whitespace) {
            return Err(err(
                var,
                format!("{p:?} is not a glob pattern (e.g. gmail-*, *delete*, source:github)"),
            ));
        }
    }
    Ok(list)
}

/// `UPSTREAM_CA_FILE`, read and checked.
fn upstream_ca(path: &str) -> Result<upstream_http::tls::CaFile, ConfigError> {
    upstream_http::tls::CaFile::load(std::path::Path::new(path)).map_err(|m| {
        err(
            UPSTREAM_CA_FILE,
            format!("{m}; it must be a PEM file of the CA certificate(s) that signed the upstreams' certificates"),
        )
    })
}

/// A positive number of seconds, `default` when unset.
fn positive_seconds(get: &Lookup, var: &'static str, default: Duration) -> Result<Duration, ConfigError> {
    match get(var) {
        None => Ok(default),
        Some(v) => Ok(Duration::from_secs(parse_positive(var, &v)?)),
    }
}

/// A positive count (bytes, characters, connections), `default` when unset.
fn positive_count(get: &Lookup, var: &'static str, default: usize) -> Result<usize, ConfigError> {
    match get(var) {
        None => Ok(default),
        Some(v) => Ok(parse_positive(var, &v)? as usize),
    }
}

/// A whole number of seconds where 0 disables the setting.
fn whole_seconds(var: &'static str, v: &str) -> Result<Duration, ConfigError> {
    v.parse::<u64>()
        .map(Duration::from_secs)
        .map_err(|_| err(var, format!("{v:?} is not a whole number of seconds (0 disables)")))
}

/// What `mcp-search-proxy demo` reads: `PORT`, `LOG_LEVEL` and `LOG_FORMAT` (default text,
/// for a person at a terminal), with the same rules as the service.
pub fn demo_from_lookup(
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<(u16, log::LevelFilter, LogFormat), ConfigError> {
    let get = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    Ok((
        parse_port(get(PORT))?,
        parse_log_level(get(LOG_LEVEL))?,
        parse_log_format(get(LOG_FORMAT), LogFormat::Text)?,
    ))
}

fn parse_port(v: Option<String>) -> Result<u16, ConfigError> {
    match v {
        None => Ok(DEFAULT_PORT),
        Some(v) => v
            .parse::<u16>()
            .map_err(|_| err(PORT, format!("{v:?} is not a port number (0-65535)"))),
    }
}

fn parse_log_level(v: Option<String>) -> Result<log::LevelFilter, ConfigError> {
    match v {
        None => Ok(log::LevelFilter::Info),
        Some(v) => v.parse::<log::LevelFilter>().map_err(|_| {
            err(
                LOG_LEVEL,
                format!("{v:?} is not one of off, error, warn, info, debug, trace"),
            )
        }),
    }
}

fn parse_log_format(v: Option<String>, default: LogFormat) -> Result<LogFormat, ConfigError> {
    match v.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None => Ok(default),
        Some("json") => Ok(LogFormat::Json),
        Some("text") => Ok(LogFormat::Text),
        Some(other) => Err(err(LOG_FORMAT, format!("{other:?} is not json or text"))),
    }
}

fn parse_bool(var: &'static str, v: Option<String>) -> Result<bool, ConfigError> {
    match v.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("false") | Some("0") | Some("no") => Ok(false),
        Some("true") | Some("1") | Some("yes") => Ok(true),
        Some(other) => Err(err(var, format!("{other:?} is not true or false"))),
    }
}

/// A token that goes into an `Authorization` header: printable ASCII, no spaces. The error
/// says which one is wrong and never echoes it.
fn check_header_token(var: &'static str, what: &str, token: &str) -> Result<(), ConfigError> {
    if token.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Ok(());
    }
    Err(err(
        var,
        format!("{what} contains a space, a control character (CR, LF, …) or a non-ASCII character; tokens are sent as HTTP header values"),
    ))
}

/// `PROXY_TOKENS` (comma-separated) and `PROXY_TOKENS_FILE` (one per line or comma-separated,
/// `#` starts a comment): each entry `token` or `group:token`. Unnamed tokens are groups
/// `client1`, `client2`, … in order.
fn client_tokens(inline: Option<String>, file: Option<String>) -> Result<Vec<ClientToken>, ConfigError> {
    let mut entries: Vec<(String, &'static str)> = Vec::new();
    if let Some(list) = inline {
        entries.extend(split_list(&list).map(|e| (e.to_string(), PROXY_TOKENS)));
    }
    if let Some(path) = file {
        let text =
            std::fs::read_to_string(&path).map_err(|e| err(PROXY_TOKENS_FILE, format!("cannot read {path}: {e}")))?;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            entries.extend(split_list(line).map(|e| (e.to_string(), PROXY_TOKENS_FILE)));
        }
        if entries.iter().all(|(_, v)| *v != PROXY_TOKENS_FILE) {
            return Err(err(PROXY_TOKENS_FILE, format!("{path} holds no token")));
        }
    }
    let mut out: Vec<ClientToken> = Vec::new();
    for (i, (entry, var)) in entries.into_iter().enumerate() {
        let (group, token) = match entry.split_once(':') {
            Some((g, t))
                if !g.is_empty()
                    && g.len() <= 64
                    && g.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
                    && !t.is_empty() =>
            {
                (g.to_string(), t.to_string())
            }
            _ => (format!("client{}", i + 1), entry),
        };
        let what = format!("the token of entry {} (group {group})", i + 1);
        check_header_token(var, &what, &token)?;
        if token.chars().count() < MIN_CLIENT_TOKEN_CHARS {
            return Err(err(
                var,
                format!("{what} is shorter than {MIN_CLIENT_TOKEN_CHARS} characters; use a random token (e.g. `openssl rand -hex 24`)"),
            ));
        }
        if out.iter().any(|t| t.token == token) {
            return Err(err(var, format!("{what} is listed twice")));
        }
        out.push(ClientToken { group, token });
    }
    Ok(out)
}

fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|p| !p.is_empty())
}

/// `label=http://…` names an upstream explicitly; a plain URL gets a derived label.
fn split_label(s: &str) -> (Option<String>, &str) {
    if let Some((label, rest)) = s.split_once('=') {
        let label_ok = !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if label_ok && (rest.starts_with("http://") || rest.starts_with("https://")) {
            return (Some(label.to_string()), rest.trim());
        }
    }
    (None, s.trim())
}

/// Checks entry `index` (0-based). Messages show the URL redacted, and never the text of an
/// entry that is not a URL at all: that may be the tail of a token that contained a comma.
fn validate_url(var: &'static str, index: usize, url: &str) -> Result<(), ConfigError> {
    let n = index + 1;
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).ok_or_else(|| {
        err(
            var,
            format!("entry {n} is not an http:// or https:// URL (entries are separated by commas; a token cannot contain one)"),
        )
    })?;
    let shown = proxy_core::redact::url(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() || authority.contains(char::is_whitespace) {
        return Err(err(var, format!("entry {n} ({shown}) has no host")));
    }
    if url.parse::<awc::http::Uri>().is_err() {
        return Err(err(var, format!("entry {n} ({shown}) is not a valid URL")));
    }
    Ok(())
}

/// A short label from the URL's host: its first DNS label for names (`litellm` for
/// `http://litellm:4000/mcp`), `upstream<N>` for IP addresses and localhost.
fn derive_label(url: &str, index: usize) -> String {
    let rest = url.split_once("://").map(|x| x.1).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map(|x| x.1).unwrap_or(authority);
    let host = if host.starts_with('[') {
        ""
    } else {
        host.split(':').next().unwrap_or("")
    };
    let first = host.split('.').next().unwrap_or("");
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    if first.is_empty() || is_ip || first == "localhost" {
        return format!("upstream{}", index + 1);
    }
    first
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn parse_positive(var: &'static str, v: &str) -> Result<u64, ConfigError> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(err(var, format!("{v:?} is not a positive whole number"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(&|k| map.get(k).cloned())
    }

    #[test]
    fn upstreams_split_on_the_first_pipe_and_get_labels() {
        let c = cfg(&[(
            UPSTREAMS,
            "http://litellm:4000/mcp|sk-a|b, browser=http://127.0.0.1:8931/mcp,http://10.0.0.1/mcp,py-sse=http://h/mcp",
        )])
        .unwrap();
        assert_eq!(c.upstreams.len(), 4);
        assert_eq!(c.upstreams[3].label, "py-sse");
        assert_eq!(c.upstreams[0].label, "litellm");
        assert_eq!(c.upstreams[0].token.as_deref(), Some("sk-a|b"));
        assert_eq!(c.upstreams[1].label, "browser");
        assert_eq!(c.upstreams[1].url, "http://127.0.0.1:8931/mcp");
        assert_eq!(c.upstreams[1].token, None);
        assert_eq!(c.upstreams[2].label, "upstream3");
        assert_eq!(c.port, DEFAULT_PORT);
        assert_eq!(c.catalog_ttl, Some(DEFAULT_TTL));
    }

    #[test]
    fn legacy_positional_form_and_precedence() {
        let c = cfg(&[
            (UPSTREAM_URLS, "http://a.example/mcp,http://b.example/mcp"),
            (UPSTREAM_TOKENS, ",tb"),
        ])
        .unwrap();
        assert_eq!(c.upstreams[0].token, None);
        assert_eq!(c.upstreams[1].token.as_deref(), Some("tb"));
        let c = cfg(&[
            (UPSTREAMS, "http://x.example/mcp"),
            (UPSTREAM_URLS, "http://a.example/mcp"),
        ])
        .unwrap();
        assert_eq!(c.upstreams.len(), 1);
        assert_eq!(c.upstreams[0].url, "http://x.example/mcp");
    }

    #[test]
    fn master_key_only_for_litellm_urls_without_own_token() {
        let c = cfg(&[
            (
                UPSTREAMS,
                "http://litellm:4000/mcp,http://other/mcp,http://litellm-b/mcp|own",
            ),
            (LITELLM_MASTER_KEY, "sk-master"),
        ])
        .unwrap();
        assert_eq!(c.upstreams[0].token.as_deref(), Some("sk-master"));
        assert_eq!(c.upstreams[1].token, None);
        assert_eq!(c.upstreams[2].token.as_deref(), Some("own"));
    }

    #[test]
    fn a11y_urls_get_their_own_timeout() {
        let c = cfg(&[
            (UPSTREAMS, "http://a11y:8931/mcp,http://x/mcp"),
            (UPSTREAM_TIMEOUT_SEC, "30"),
        ])
        .unwrap();
        assert_eq!(c.upstreams[0].timeout, DEFAULT_A11Y_TIMEOUT);
        assert_eq!(c.upstreams[1].timeout, Duration::from_secs(30));
    }

    #[test]
    fn duplicate_labels_are_made_unique() {
        let c = cfg(&[(UPSTREAMS, "http://svc:1/mcp,http://svc:2/mcp")]).unwrap();
        assert_eq!(c.upstreams[0].label, "svc");
        assert_eq!(c.upstreams[1].label, "svc2");
    }

    #[test]
    fn bad_values_name_their_variable() {
        let bad = |vars: &[(&str, &str)], var: &str| assert_eq!(cfg(vars).unwrap_err().var, var);
        bad(&[], UPSTREAMS);
        bad(&[(UPSTREAMS, "ftp://x")], UPSTREAMS);
        bad(&[(UPSTREAMS, "http://")], UPSTREAMS);
        bad(&[(UPSTREAMS, "http://a/mcp,http://a/mcp")], UPSTREAMS);
        bad(&[(UPSTREAM_URLS, "nope")], UPSTREAM_URLS);
        bad(&[(UPSTREAMS, "http://a/mcp"), (PORT, "99999")], PORT);
        bad(&[(UPSTREAMS, "http://a/mcp"), (CATALOG_TTL_SEC, "-1")], CATALOG_TTL_SEC);
        bad(
            &[(UPSTREAMS, "http://a/mcp"), (UPSTREAM_TIMEOUT_SEC, "0")],
            UPSTREAM_TIMEOUT_SEC,
        );
        bad(&[(UPSTREAMS, "http://a/mcp"), (LOG_LEVEL, "loud")], LOG_LEVEL);
        bad(&[(UPSTREAMS, "http://a/mcp"), (LOG_FORMAT, "xml")], LOG_FORMAT);
        bad(&[(UPSTREAMS, "http://a/mcp"), (MAX_BODY_BYTES, "x")], MAX_BODY_BYTES);
        bad(&[(UPSTREAMS, "http://a/mcp"), (BIND_ADDR, "not an ip")], BIND_ADDR);
        bad(&[(UPSTREAMS, "http://a/mcp"), (READ_ONLY, "maybe")], READ_ONLY);
        bad(&[(UPSTREAMS, "http://a/mcp"), (TOOLS_DENY, "source:")], TOOLS_DENY);
        bad(
            &[(UPSTREAMS, "http://a/mcp"), (LISTING_MAX_CHARS, "0")],
            LISTING_MAX_CHARS,
        );
    }

    #[test]
    fn policy_variables() {
        let c = cfg(&[
            (UPSTREAMS, "http://a/mcp"),
            (TOOLS_ALLOW, "gmail-*, source:web"),
            (TOOLS_DENY, "*delete*"),
            (READ_ONLY, "true"),
            (PINNED_TOOLS, "gmail-send_message"),
        ])
        .unwrap();
        assert_eq!(c.policy.allow, vec!["gmail-*", "source:web"]);
        assert_eq!(c.policy.deny, vec!["*delete*"]);
        assert!(c.policy.read_only);
        assert_eq!(c.policy.pinned, vec!["gmail-send_message"]);
        assert_eq!(c.listing_max_chars, DEFAULT_LISTING_MAX_CHARS);
    }

    #[test]
    fn master_key_goes_only_to_litellm_hosts() {
        let c = cfg(&[
            (
                UPSTREAMS,
                "http://evil.example/litellm/mcp,http://x.example/mcp?via=litellm,http://LiteLLM.internal:4000/mcp",
            ),
            (LITELLM_MASTER_KEY, "sk-master"),
        ])
        .unwrap();
        assert_eq!(c.upstreams[0].token, None, "litellm only in the path");
        assert_eq!(c.upstreams[1].token, None, "litellm only in the query");
        assert_eq!(c.upstreams[2].token.as_deref(), Some("sk-master"));
    }

    #[test]
    fn tokens_are_header_values_and_errors_never_echo_them() {
        // A token with a comma splits into a second "entry": the message must not show it.
        let e = cfg(&[(UPSTREAMS, "http://a/mcp|sk-abc,def-SECRET-TAIL")]).unwrap_err();
        assert_eq!(e.var, UPSTREAMS);
        assert!(!e.to_string().contains("SECRET"), "{e}");
        assert!(e.to_string().contains("entry 2"), "{e}");
        for bad in ["sk-a\r\nX-Evil: 1", "sk a", "sk-\u{e9}"] {
            let e = cfg(&[(UPSTREAMS, &format!("http://a/mcp|{bad}"))]).unwrap_err();
            assert_eq!(e.var, UPSTREAMS);
            assert!(!e.to_string().contains(bad), "{e}");
        }
        let e = cfg(&[(UPSTREAMS, "http://litellm/mcp"), (LITELLM_MASTER_KEY, "sk-\nmaster")]).unwrap_err();
        assert_eq!(e.var, LITELLM_MASTER_KEY);
        // A URL with credentials is shown redacted.
        let e = cfg(&[(UPSTREAMS, "http://u:pw-SECRET@h/mcp,http://u:pw-SECRET@h/mcp")]).unwrap_err();
        assert!(!e.to_string().contains("SECRET"), "{e}");
    }

    #[test]
    fn client_tokens_with_groups_from_the_variable_and_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens");
        std::fs::write(
            &file,
            "# mounted secret\nteam-b:bbbbbbbbbbbbbbbbbbbb\n\ncccccccccccccccccccc # no group\n",
        )
        .unwrap();
        let c = cfg(&[
            (UPSTREAMS, "http://a/mcp"),
            (PROXY_TOKENS, "team-a:aaaaaaaaaaaaaaaaaaaa"),
            (PROXY_TOKENS_FILE, file.to_str().unwrap()),
        ])
        .unwrap();
        let groups: Vec<&str> = c.client_tokens.iter().map(|t| t.group.as_str()).collect();
        assert_eq!(groups, ["team-a", "team-b", "client3"]);
        assert_eq!(c.client_tokens[1].token, "bbbbbbbbbbbbbbbbbbbb");
        assert_eq!(c.bind_addr, "0.0.0.0", "with tokens the default bind is every address");
        assert!(!format!("{c:?}").contains("aaaaaaaaaaaa"));
        let bad = |vars: &[(&str, &str)], var: &str| {
            let e = cfg(vars).unwrap_err();
            assert_eq!(e.var, var, "{e}");
            e
        };
        let e = bad(&[(UPSTREAMS, "http://a/mcp"), (PROXY_TOKENS, "short")], PROXY_TOKENS);
        assert!(!e.to_string().contains("short\""), "{e}");
        bad(
            &[(UPSTREAMS, "http://a/mcp"), (PROXY_TOKENS, "g:aaaaaaaaaaaaaaaa\taaaa")],
            PROXY_TOKENS,
        );
        bad(
            &[
                (UPSTREAMS, "http://a/mcp"),
                (PROXY_TOKENS, "aaaaaaaaaaaaaaaaaaaa,x:aaaaaaaaaaaaaaaaaaaa"),
            ],
            PROXY_TOKENS,
        );
        bad(
            &[(UPSTREAMS, "http://a/mcp"), (PROXY_TOKENS_FILE, "/nonexistent/tokens")],
            PROXY_TOKENS_FILE,
        );
    }

    #[test]
    fn without_client_tokens_only_loopback_unless_allowed() {
        let c = cfg(&[(UPSTREAMS, "http://a/mcp")]).unwrap();
        assert_eq!(c.bind_addr, "127.0.0.1");
        assert!(c.client_tokens.is_empty());
        let e = cfg(&[(UPSTREAMS, "http://a/mcp"), (BIND_ADDR, "0.0.0.0")]).unwrap_err();
        assert_eq!(e.var, BIND_ADDR);
        assert!(e.to_string().contains(PROXY_TOKENS), "{e}");
        let c = cfg(&[(UPSTREAMS, "http://a/mcp"), (BIND_ADDR, "::1")]).unwrap();
        assert_eq!(c.bind_addr, "::1");
        let c = cfg(&[(UPSTREAMS, "http://a/mcp"), (ALLOW_UNAUTHENTICATED, "true")]).unwrap();
        assert_eq!(c.bind_addr, "0.0.0.0");
        assert!(c.allow_unauthenticated);
    }

    #[test]
    fn slow_client_and_shutdown_settings() {
        let c = cfg(&[(UPSTREAMS, "http://a/mcp")]).unwrap();
        assert_eq!(c.body_timeout, DEFAULT_BODY_TIMEOUT);
        assert_eq!(c.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert_eq!(c.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
        assert_eq!(
            c.refresh_min_interval,
            proxy_actors::catalog::DEFAULT_MIN_REFRESH_INTERVAL
        );
        let c = cfg(&[
            (UPSTREAMS, "http://a/mcp"),
            (BODY_TIMEOUT_SEC, "3"),
            (MAX_CONNECTIONS, "64"),
            (SHUTDOWN_GRACE_SEC, "20"),
            (REFRESH_MIN_INTERVAL_SEC, "0"),
        ])
        .unwrap();
        assert_eq!(c.body_timeout, Duration::from_secs(3));
        assert_eq!(c.max_connections, 64);
        assert_eq!(c.shutdown_grace, Duration::from_secs(20));
        assert_eq!(c.refresh_min_interval, Duration::ZERO);
        let bad = |var: &str, v: &str| assert_eq!(cfg(&[(UPSTREAMS, "http://a/mcp"), (var, v)]).unwrap_err().var, var);
        bad(BODY_TIMEOUT_SEC, "0");
        bad(MAX_CONNECTIONS, "many");
        bad(REFRESH_MIN_INTERVAL_SEC, "-1");
        bad(ALLOW_UNAUTHENTICATED, "perhaps");
    }

    #[test]
    fn question_settings_have_defaults_bounds_and_a_secret_that_is_never_shown() {
        let c = cfg(&[(UPSTREAMS, "http://a/mcp")]).unwrap();
        assert_eq!(c.asking, Asking::default());
        assert_eq!(c.asking.timeout, Duration::from_secs(300));
        let secret = "s3cret-s3cret-s3cret-s3cret-s3cret";
        let c = cfg(&[
            (UPSTREAMS, "http://a/mcp"),
            (ELICITATION_TIMEOUT_SEC, "30"),
            (MAX_PENDING_QUESTIONS, "4"),
            (REQUEST_STATE_SECRET, secret),
        ])
        .unwrap();
        assert_eq!(c.asking.timeout, Duration::from_secs(30));
        assert_eq!(c.asking.max_pending, 4);
        assert_eq!(c.asking.state_secret.as_deref(), Some(secret));
        assert!(!format!("{c:?}").contains(secret), "the secret is never shown");
        assert_eq!(c.sse_keepalive, DEFAULT_SSE_KEEPALIVE);
        let c = cfg(&[(UPSTREAMS, "http://a/mcp"), (SSE_KEEPALIVE_SEC, "5")]).unwrap();
        assert_eq!(c.sse_keepalive, Duration::from_secs(5));
        let bad = |var: &str, v: &str| assert_eq!(cfg(&[(UPSTREAMS, "http://a/mcp"), (var, v)]).unwrap_err().var, var);
        bad(ELICITATION_TIMEOUT_SEC, "0");
        bad(MAX_PENDING_QUESTIONS, "0");
        bad(REQUEST_STATE_SECRET, "short");
        bad(SSE_KEEPALIVE_SEC, "0");
    }

    #[test]
    fn metrics_are_private_unless_said_otherwise() {
        assert!(!cfg(&[(UPSTREAMS, "http://a/mcp")]).unwrap().metrics_public);
        assert!(
            cfg(&[(UPSTREAMS, "http://a/mcp"), (METRICS_PUBLIC, "true")])
                .unwrap()
                .metrics_public
        );
        let e = cfg(&[(UPSTREAMS, "http://a/mcp"), (METRICS_PUBLIC, "public")]).unwrap_err();
        assert_eq!(e.var, METRICS_PUBLIC);
    }

    #[test]
    fn embed_model_is_a_path_and_empty_means_lexical_only() {
        assert_eq!(cfg(&[(UPSTREAMS, "http://a/mcp")]).unwrap().embed_model, None);
        assert_eq!(
            cfg(&[(UPSTREAMS, "http://a/mcp"), (EMBED_MODEL, " ")])
                .unwrap()
                .embed_model,
            None
        );
        // not checked here: a directory that cannot be loaded turns the arm off at start
        assert_eq!(
            cfg(&[(UPSTREAMS, "http://a/mcp"), (EMBED_MODEL, "/no/such/model")])
                .unwrap()
                .embed_model,
            Some(PathBuf::from("/no/such/model"))
        );
    }

    #[test]
    fn an_installed_model_is_found_only_when_embed_model_is_not_set() {
        let dir = tempfile::tempdir().unwrap();
        let (empty, with) = (dir.path().join("empty"), dir.path().join("with"));
        std::fs::create_dir_all(with.join(INSTALLED_MODEL)).unwrap();
        std::fs::create_dir_all(empty.join(INSTALLED_MODEL)).unwrap(); // no weights in it
        std::fs::write(with.join(INSTALLED_MODEL).join("model.safetensors"), b"x").unwrap();
        let dirs = [empty.clone(), with.clone()];
        assert_eq!(installed_model(None, &dirs), Some(with.join(INSTALLED_MODEL)));
        assert_eq!(installed_model(None, &[empty]), None);
        assert_eq!(installed_model(None, &[]), None);
        // set, even empty: the variable decides (empty = lexical only)
        assert_eq!(installed_model(Some(std::ffi::OsStr::new("")), &dirs), None);
        assert_eq!(installed_model(Some(std::ffi::OsStr::new("/m")), &dirs), None);
    }

    #[test]
    fn the_demo_reads_port_and_logging_with_the_same_rules() {
        let demo = |vars: &[(&str, &str)]| {
            let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            demo_from_lookup(&|k| map.get(k).cloned())
        };
        assert_eq!(
            demo(&[]).unwrap(),
            (DEFAULT_PORT, log::LevelFilter::Info, LogFormat::Text)
        );
        assert_eq!(
            demo(&[(PORT, "9000"), (LOG_FORMAT, "JSON")]).unwrap(),
            (9000, log::LevelFilter::Info, LogFormat::Json)
        );
        assert_eq!(demo(&[(LOG_FORMAT, "xml")]).unwrap_err().var, LOG_FORMAT);
        assert_eq!(demo(&[(PORT, "x")]).unwrap_err().var, PORT);
    }

    #[test]
    fn ca_file_and_egress_proxies() {
        let c = cfg(&[(UPSTREAMS, "https://a/mcp")]).unwrap();
        assert!(c.upstream_ca.is_none() && c.egress.is_direct());
        let dir = tempfile::tempdir().unwrap();
        let bad = |vars: &[(&str, &str)], var: &str| {
            let e = cfg(vars).unwrap_err();
            assert_eq!(e.var, var, "{e}");
            e
        };
        let missing = dir.path().join("missing.pem");
        let e = bad(
            &[
                (UPSTREAMS, "https://a/mcp"),
                (UPSTREAM_CA_FILE, missing.to_str().unwrap()),
            ],
            UPSTREAM_CA_FILE,
        );
        assert!(
            e.to_string().contains("cannot read") && e.to_string().contains("PEM"),
            "{e}"
        );
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "hello").unwrap();
        bad(
            &[(UPSTREAMS, "https://a/mcp"), (UPSTREAM_CA_FILE, junk.to_str().unwrap())],
            UPSTREAM_CA_FILE,
        );
        let c = cfg(&[
            (UPSTREAMS, "https://a/mcp"),
            ("HTTPS_PROXY", "http://user:pw-SECRET@proxy.corp:3128"),
            ("no_proxy", ".internal"),
        ])
        .unwrap();
        assert_eq!(c.egress.https.as_ref().unwrap().authority(), "proxy.corp:3128");
        assert!(c.egress.proxy_for(true, "mcp.internal", 443).is_none());
        assert!(!format!("{c:?}").contains("SECRET"));
        let e = bad(
            &[
                (UPSTREAMS, "https://a/mcp"),
                ("https_proxy", "socks5://u:pw-SECRET@p:1080"),
            ],
            "https_proxy",
        );
        assert!(!e.to_string().contains("SECRET"), "{e}");
    }

    #[test]
    fn ttl_zero_disables_and_tokens_never_print() {
        let c = cfg(&[(UPSTREAMS, "http://a/mcp|secret-token"), (CATALOG_TTL_SEC, "0")]).unwrap();
        assert_eq!(c.catalog_ttl, None);
        assert!(!format!("{c:?}").contains("secret-token"));
    }
}
