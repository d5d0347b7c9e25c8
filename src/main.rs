//! The `mcp-search-proxy` binary: parse the command line and the environment, start logging,
//! run. Exits with 64 (EX_USAGE) on invalid configuration before binding any port.

use std::net::TcpListener;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use mcp_search_proxy::config::{self, Config};
use mcp_search_proxy::{cli, logging, server};

const EX_USAGE: u8 = 64;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's options: two at process start (from the environment), one switched at run time.
mod allocator {
    use std::ffi::{c_int, c_long};
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::{AtomicBool, Ordering};

    extern "C" {
        fn mi_option_get(option: c_int) -> c_long;
        fn mi_option_set(option: c_int, value: c_long);
    }

    /// `mi_option_purge_delay` in the bundled mimalloc 3 (`mi_option_e`; Cargo.lock pins it,
    /// and [`tune`] checks the number against the environment before using it).
    const PURGE_DELAY: c_int = 15;
    /// Purge delay from the start until `main` switches it (3 ms: as good as immediate for the
    /// first build, which runs between the switches anyway).
    const START_PURGE_DELAY: c_long = 3;
    /// Purge delay while serving (mimalloc's default).
    const SERVING_PURGE_DELAY: c_long = 10;
    /// Whether builds and serving get their own purge delay (see [`tune`]).
    static SWITCH: AtomicBool = AtomicBool::new(false);

    /// Arenas are committed as they are used (`ARENA_EAGER_COMMIT=0`; eager commit of the
    /// first 1 GiB arena cost ~30 MB of RSS with 11,739 tools), and freed memory goes back to
    /// the OS at once while a catalog is built (`PURGE_DELAY=0`: a build frees tens of MB that
    /// an idle proxy would otherwise keep, since mimalloc purges only when it allocates
    /// again). While serving, purges are batched (10 ms): purging every freed page at once
    /// cost ~30% of the relay throughput at 64 concurrent calls (19.5k vs 27k calls/s) in
    /// `madvise` calls and TLB flushes. Both start options must be in the environment when the process starts, so
    /// when either is missing the binary re-executes itself once with them (same PID,
    /// arguments and environment otherwise; about a millisecond). A `MIMALLOC_PURGE_DELAY`
    /// set by the user is kept and never switched.
    pub fn tune() {
        const EAGER: &str = "MIMALLOC_ARENA_EAGER_COMMIT";
        const DELAY: &str = "MIMALLOC_PURGE_DELAY";
        const OURS: &str = "MCP_SEARCH_PROXY_ALLOCATOR";
        let ours = std::env::var_os(OURS).is_some();
        if std::env::var_os(EAGER).is_some() && (ours || std::env::var_os(DELAY).is_some()) {
            // SAFETY: a plain getter of a process-wide integer option.
            let delay = unsafe { mi_option_get(PURGE_DELAY) };
            // The start value is an unusual one so that reading it back proves the option's
            // number; on a mismatch the options are never switched.
            SWITCH.store(ours && delay == START_PURGE_DELAY, Ordering::Relaxed);
            return;
        }
        let Ok(exe) = std::env::current_exe() else { return };
        let mut cmd = std::process::Command::new(exe);
        cmd.args(std::env::args_os().skip(1));
        if std::env::var_os(EAGER).is_none() {
            cmd.env(EAGER, "0");
        }
        if std::env::var_os(DELAY).is_none() {
            cmd.env(DELAY, START_PURGE_DELAY.to_string()).env(OURS, "1");
        }
        // Returns only when the exec failed: then run on with the defaults.
        let _ = cmd.exec();
    }

    /// A catalog build starts: freed memory goes back at once.
    pub fn building() {
        if SWITCH.load(Ordering::Relaxed) {
            // SAFETY: a plain setter of a process-wide integer option.
            unsafe { mi_option_set(PURGE_DELAY, 0) }
        }
    }

    /// The build ended: batch the purges again.
    pub fn serving() {
        if SWITCH.load(Ordering::Relaxed) {
            // SAFETY: as above.
            unsafe { mi_option_set(PURGE_DELAY, SERVING_PURGE_DELAY) }
        }
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "mcp-search-proxy",
    version,
    about = "An MCP proxy that replaces hundreds of upstream tool schemas with four tools: mcp_search, mcp_describe, mcp_call, mcp_refresh.",
    after_help = "Configuration comes from environment variables (UPSTREAMS, CATALOG_TTL_SEC, MANIFEST_PATH, PORT, LOG_LEVEL, ...); see the README.\nWithout a subcommand the proxy serves (same as `serve`)."
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
    /// Rank the tools of a catalog file for a query (the same code path as mcp_search).
    Search(cli::search::SearchArgs),
    /// Measure retrieval quality on a query set with gold labels.
    Eval(cli::eval::EvalArgs),
    /// Run only the embedded demo upstream (for benchmarks and offline stacks).
    DemoUpstream(cli::upstream::UpstreamArgs),
}

fn main() -> ExitCode {
    allocator::tune();
    proxy_actors::memory::set_heavy_work_hooks(allocator::building, allocator::serving);
    allocator::serving();
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(),
        Command::Demo => demo(),
        Command::Search(args) => args.run(),
        Command::Eval(args) => args.run(),
        Command::DemoUpstream(args) => args.run(),
    }
}

fn serve() -> ExitCode {
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcp-search-proxy: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    logging::init(cfg.log_level, cfg.log_format);
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
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let port = match get(config::PORT).map(|v| v.trim().parse::<u16>()) {
        None => config::DEFAULT_PORT,
        Some(Ok(p)) => p,
        Some(Err(_)) => {
            eprintln!("mcp-search-proxy: invalid configuration: PORT: not a port number");
            return ExitCode::from(EX_USAGE);
        }
    };
    let log_level = match get(config::LOG_LEVEL).map(|v| v.parse::<log::LevelFilter>()) {
        None => log::LevelFilter::Info,
        Some(Ok(l)) => l,
        Some(Err(_)) => {
            eprintln!("mcp-search-proxy: invalid configuration: LOG_LEVEL: not a log level");
            return ExitCode::from(EX_USAGE);
        }
    };
    let log_format = match get(config::LOG_FORMAT).as_deref() {
        Some("json") => config::LogFormat::Json,
        _ => config::LogFormat::Text,
    };
    logging::init(log_level, log_format);
    let settings = cli::demo::DemoSettings {
        port,
        log_level,
        log_format,
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
