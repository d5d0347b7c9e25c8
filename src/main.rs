//! The `mcp-search-proxy` binary: parse the command line and the environment, start logging,
//! run. Exits with 64 (EX_USAGE) on invalid configuration before binding any port.

#![forbid(unsafe_code)]

use std::net::TcpListener;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use mcp_search_proxy::config::{self, Config};
use mcp_search_proxy::{cli, logging, server};

const EX_USAGE: u8 = 64;

/// mimalloc as the global allocator: the proxy relays each call across threads (HTTP worker →
/// upstream actor → back), so most allocations are freed on another thread than the one that
/// made them; glibc malloc spent ~20% of the proxy's CPU there and kept an arena per thread.
/// Built without transparent huge pages (the `no_thp` feature, and [`no_huge_pages`] for
/// kernels that give them unasked): with them, each arena the allocator touched was backed by
/// 2 MiB pages, and an idle proxy with 557 tools held 55 MB instead of 26 MB (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "mcp-search-proxy",
    version,
    about = "An MCP proxy that replaces hundreds of upstream tool schemas with four tools: mcp_search, mcp_describe, mcp_call, mcp_refresh.",
    after_help = "Configuration comes from environment variables (UPSTREAMS, CATALOG_TTL_SEC, MANIFEST_PATH, PORT, LOG_LEVEL, ...); see docs/configuration.md.\nWithout a subcommand the proxy serves (same as `serve`)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the proxy (the default).
    Serve,
    /// Run the proxy on 127.0.0.1:8092 in front of an embedded demo upstream.
    Demo,
    /// Run only the embedded demo upstream (for benchmarks and offline stacks).
    DemoUpstream(cli::upstream::UpstreamArgs),
}

fn main() -> ExitCode {
    // first, before any thread starts
    no_huge_pages();
    heap::mimalloc_is_global();
    run_batches_one_per_core();
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(),
        Command::Demo => demo(),
        Command::DemoUpstream(args) => args.run(),
    }
}

/// Transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`), on kernels whose
/// setting is `always` as well as `madvise`: a proxy's heap is many small objects spread over
/// its threads' pages, and a 2 MiB page per touched region multiplies its resident size. A
/// kernel without the call (not Linux, or before 3.15) keeps its default.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
}

/// The catalog's embedding runs one batch per core, which needs candle's pool for element-wise
/// steps to run them on the calling thread (see `embed::candle_threads_for_batches`). candle
/// reads that setting only from the environment (once, when its pool starts), so the binary
/// sets it, first thing in `main` before any thread starts: the environment is process-wide and
/// not safe to change while another thread reads it, which is why the embed library leaves it
/// to `main`.
fn run_batches_one_per_core() {
    let current = std::env::var_os(embed::CANDLE_NUM_THREADS);
    if let Some(value) = embed::candle_threads_for_batches(current.as_deref()) {
        std::env::set_var(embed::CANDLE_NUM_THREADS, value);
    }
}

/// The model found where `scripts/fetch-model.sh` installs it, when `EMBED_MODEL` is not set
/// (see [`config::installed_model`]).
fn installed_model() -> Option<std::path::PathBuf> {
    config::installed_model(
        std::env::var_os(config::EMBED_MODEL).as_deref(),
        &config::model_search_dirs(),
    )
}

fn serve() -> ExitCode {
    let mut cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcp-search-proxy: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    logging::init(cfg.log_level, cfg.log_format);
    if cfg.embed_model.is_none() {
        cfg.embed_model = installed_model();
        if let Some(dir) = &cfg.embed_model {
            log::info!(path = dir.display().to_string().as_str(); "embedding model found where scripts/fetch-model.sh installs it");
        }
    }
    let listener = match TcpListener::bind((cfg.bind_addr.as_str(), cfg.port)) {
        Ok(l) => l,
        Err(e) => {
            log::error!(addr = format!("{}:{}", cfg.bind_addr, cfg.port).as_str(), error = e.to_string().as_str(); "cannot bind");
            return ExitCode::FAILURE;
        }
    };
    exit_code(actix_web::rt::System::new().block_on(server::run(cfg, listener)))
}

fn demo() -> ExitCode {
    // The demo needs no configuration, but honours PORT and the log settings when given.
    let (port, log_level, log_format) = match config::demo_from_lookup(&|k| std::env::var(k).ok()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mcp-search-proxy: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    logging::init(log_level, log_format);
    let settings = cli::demo::DemoSettings {
        port,
        log_level,
        log_format,
        embed_model: match std::env::var(config::EMBED_MODEL) {
            Ok(dir) if !dir.trim().is_empty() => Some(dir.trim().into()),
            _ => installed_model(),
        },
    };
    exit_code(actix_web::rt::System::new().block_on(cli::demo::run(settings)))
}

fn exit_code(r: std::io::Result<()>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error!(error = e.to_string().as_str(); "server failed");
            ExitCode::FAILURE
        }
    }
}
