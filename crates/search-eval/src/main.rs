//! The `search-eval` binary: without a subcommand it measures retrieval quality
//! ([`search_eval::eval`]); `search-eval search` ranks a catalog file's tools for one query
//! ([`search_eval::search`]).

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use search_eval::eval::EvalArgs;
use search_eval::search::SearchArgs;
use search_eval::train::TrainArgs;
use search_eval::train_encoder::TrainEncoderArgs;

/// mimalloc as the global allocator, as the service has it: training allocates and frees a
/// batch's activations (megabytes each) every step, which the system allocator handed back to
/// the kernel and faulted in again (most of a step's time was then system time).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "search-eval",
    version,
    about = "Measure the tool search's retrieval quality on query sets with gold labels (R@1, R@5, R@10, MRR, nDCG@5, zero-result and abstain rates), or rank a catalog file's tools for one query (`search-eval search`).",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand: the evaluation.
    #[command(flatten)]
    eval: EvalArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Rank the tools of a catalog file for a query (the same code path as mcp_search).
    Search(SearchArgs),
    /// Fit the hybrid search's fusion model on the visible sets, judged leaving one set out.
    Train(TrainArgs),
    /// Fine-tune the query side of the sentence model (a LoRA delta) on licensed requests,
    /// against the frozen tool vectors; prints its learning curve.
    TrainEncoder(TrainEncoderArgs),
}

fn main() -> ExitCode {
    heap::mimalloc_is_global();
    let cli = Cli::parse();
    // before any thread starts: the catalog's embedding (--embed-model) runs one batch per core
    // (see embed::candle_threads_for_batches; the library leaves the environment to main); the
    // encoder's training runs one batch at a time, its products on every core (candle's pool)
    let training = matches!(cli.command, Some(Command::TrainEncoder(_)));
    if training {
        heap::keep_freed_memory();
    } else {
        if let Some(value) = embed::candle_threads_for_batches(std::env::var_os(embed::CANDLE_NUM_THREADS).as_deref()) {
            std::env::set_var(embed::CANDLE_NUM_THREADS, value);
        }
    }
    match cli.command {
        Some(Command::Search(args)) => args.run(),
        Some(Command::Train(args)) => args.run(),
        Some(Command::TrainEncoder(args)) => args.run(),
        None => cli.eval.run(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("search-eval").chain(argv.iter().copied()))
    }

    #[test]
    fn eval_flags_without_a_subcommand_and_search_as_one() {
        Cli::command().debug_assert();
        // the evaluation takes its flags directly (the before-stop hook's call)
        let cli = parse(&["--catalog", "c.json", "--queries", "q.json", "--limit", "10"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.eval.catalog.as_deref(), Some(std::path::Path::new("c.json")));
        assert_eq!(cli.eval.limit, 10);
        assert!(parse(&["--all-visible", "--json"]).unwrap().command.is_none());
        // and still needs its files
        assert!(parse(&[]).is_err());
        assert!(parse(&["--catalog", "c.json"]).is_err());
        // `search` needs none of the evaluation's flags, and takes its own
        let cli = parse(&[
            "search",
            "--catalog",
            "c.json",
            "--limit",
            "5",
            "--explain",
            "send",
            "email",
        ])
        .unwrap();
        match cli.command {
            Some(Command::Search(s)) => {
                assert_eq!((s.limit, s.explain), (5, true));
                assert_eq!(s.query, ["send", "email"]);
            }
            other => panic!("expected search, got {other:?}"),
        }
        assert!(
            parse(&["search", "--catalog", "c.json"]).is_err(),
            "a query is required"
        );
        // `train` takes its model and what to leave out or weigh up
        match parse(&[
            "train",
            "--embed-model",
            "m",
            "--drop",
            "cosine,doubt",
            "--set-weight",
            "toollens=4",
        ])
        .unwrap()
        .command
        {
            Some(Command::Train(t)) => {
                assert_eq!(t.drop, ["cosine", "doubt"]);
                assert_eq!(t.set_weight, ["toollens=4"]);
                assert_eq!((t.trees, t.out), (0, None));
            }
            other => panic!("expected train, got {other:?}"),
        }
        assert!(parse(&["train"]).is_err(), "train needs the model");
        // the evaluation's flags do not mix with the subcommand
        assert!(parse(&["--all-visible", "search", "--catalog", "c.json", "x"]).is_err());
    }
}
