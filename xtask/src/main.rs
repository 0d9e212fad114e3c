//! Project automation: `cargo xtask <command>`; `cargo xtask --help` lists them. xtask is the
//! task runner: the command line, codegen, the test stages; the rest it hands to the tool
//! crates of `tools/` (the PostgreSQL harness, the release tooling, the benchmarks, fuzzing,
//! the upstream schemas).

mod codegen;
mod conformance;
mod coverage;
mod demo;
mod newcomer;
mod shipping;
mod test;
#[cfg(test)]
mod tidy;
mod typescript;
mod upstream;
mod versions;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use acp_inject_tool_support::Error as ToolError;
use acp_inject_tool_support::{cache_dir, cargo, cargo_bin, copy, copy_tree, process, python, root, target_dir};

use clap::{Parser, Subcommand};

/// Project automation for acp-inject.
///
/// Every command prints each step it runs, streams that step's output as it comes, and says
/// what it installs (into the cache: `$ACP_INJECT_CACHE`, else `$XDG_CACHE_HOME/acp-inject`,
/// else `~/.cache/acp-inject`).
#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write everything generated: generated/, the Rust wire types, Python stubs, Maven version.
    Codegen {
        /// Change nothing; fail naming every stale file.
        #[arg(long)]
        check: bool,
    },
    /// Replay conformance vectors through the Rust core.
    Conformance {
        /// Directories of vector files (searched recursively) [default: spec/vectors]
        dirs: Vec<PathBuf>,
    },
    /// Every test in every language, the tidy gates, then a summary table.
    Test(test::Args),
    /// The main job: a live session against the reference agent, driven from Python.
    Demo {
        /// The scripted model's delay per step, in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 120)]
        delay_ms: u64,
    },
    /// Every comparison with the official SDKs, written to BENCHMARKS.md.
    Bench {
        /// Interleaved rounds per measurement (the median is reported).
        #[arg(default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
        rounds: u32,
        /// Rerun only the durability and scale part (the stores, the crash campaigns, the load
        /// tests) and replace it in BENCHMARKS.md, keeping the language comparisons above it.
        #[arg(long, conflicts_with_all = ["python_only", "kotlin_only", "swift_only"])]
        durability_only: bool,
        /// Rerun only the Python comparison and replace its section in BENCHMARKS.md.
        #[arg(long, conflicts_with_all = ["kotlin_only", "swift_only"])]
        python_only: bool,
        /// Rerun only the Kotlin comparison and replace its section in BENCHMARKS.md.
        #[arg(long, conflicts_with = "swift_only")]
        kotlin_only: bool,
        /// Rerun only the Swift comparison and replace its section in BENCHMARKS.md (adding it
        /// when it is not there yet).
        #[arg(long)]
        swift_only: bool,
    },
    /// Fuzzing with cargo-fuzz.
    #[command(subcommand)]
    Fuzz(acp_inject_fuzzing::Cmd),
    /// SIGKILL the reference agent at seeded random points under load, N times; then check that
    /// no accepted input was lost or delivered twice. With `--hosts 2`: two reference-agent
    /// hosts on one PostgreSQL (ACP_INJECT_POSTGRES_URL, else a server started here), clients
    /// moving between them, one host killed or paused at a time; nothing may be served twice.
    Crash {
        /// How many kills (with `--hosts 2`: kills and pauses).
        #[arg(default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
        kills: u32,
        /// The seed of every random choice [default: from the clock, printed].
        #[arg(long)]
        seed: Option<u64>,
        /// Agent hosts: 1 (stdio, SQLite) or 2 (network, PostgreSQL).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
        hosts: u8,
    },
    /// The TypeScript stage of `test` alone (tsc build, examples, vector messages).
    Typescript,
    /// Differences between spec/ and an upstream ACP schema; fails on unintended drift.
    UpstreamDiff(acp_inject_upstream::diff::Args),
    /// The vendored upstream schemas (spec/upstream/).
    #[command(subcommand)]
    Upstream(upstream::Cmd),
    /// The installable artifacts in dist/: wheel, Maven repository, Swift package, crates.
    Dist(acp_inject_release::dist::Args),
    /// API docs (Rust, Python, Kotlin, Swift) and the guide (docs/guide, with its timeline of a
    /// recorded session), then every link checked.
    Docs {
        /// Where to write them (a relative path is from the current directory; default:
        /// `<target>/doc-site`).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Run a command against a private PostgreSQL 15 server (Debian's packages, installed into
    /// the cache on first use): ACP_INJECT_POSTGRES_URL names a fresh database `acp_inject`;
    /// the server stops when the command ends, and its exit status is ours.
    Postgres {
        /// The command and its arguments, after `--`; `$ACP_INJECT_POSTGRES_URL` in them
        /// (quoted: `'$ACP_INJECT_POSTGRES_URL'`) is replaced with the URL.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
}

fn main() -> ExitCode {
    let started = std::time::Instant::now();
    let result = match Cli::parse().command {
        Cmd::Codegen { check } => codegen::run(if check { codegen::Mode::Check } else { codegen::Mode::Write }),
        Cmd::Conformance { dirs } => conformance::run(dirs),
        Cmd::Test(args) => test::run(&args),
        Cmd::Demo { delay_ms } => demo::run(delay_ms),
        Cmd::Bench { rounds, durability_only, python_only, kotlin_only, swift_only } => {
            if durability_only {
                acp_inject_benchmarks::durability_only().map_err(Error::from)
            } else if python_only {
                acp_inject_benchmarks::python_only(rounds).map_err(Error::from)
            } else if kotlin_only {
                acp_inject_benchmarks::kotlin_only(rounds).map_err(Error::from)
            } else if swift_only {
                acp_inject_benchmarks::swift_only(rounds).map_err(Error::from)
            } else {
                acp_inject_benchmarks::run(rounds).map_err(Error::from)
            }
        }
        Cmd::Fuzz(cmd) => acp_inject_fuzzing::run(cmd).map_err(Error::from),
        Cmd::Crash { kills, seed, hosts } => acp_inject_benchmarks::crash::run(kills, seed, hosts).map_err(Error::from),
        Cmd::Typescript => typescript::run(),
        Cmd::UpstreamDiff(args) => acp_inject_upstream::diff::execute(args).map_err(Error::msg),
        Cmd::Upstream(cmd) => upstream::run(cmd),
        Cmd::Dist(args) => acp_inject_release::dist::run(args).map_err(Error::from),
        Cmd::Docs { out } => {
            acp_inject_release::docs::run(out.as_deref()).map(|summary| println!("docs: {summary}")).map_err(Error::from)
        }
        Cmd::Postgres { command } => match acp_inject_postgres_harness::run(&command) {
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e.into()),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e} (after {:.0} s)", started.elapsed().as_secs_f64());
            ExitCode::FAILURE
        }
    }
}

/// Everything that can stop an xtask command: what the tool crates report
/// ([`acp_inject_tool_support::Error`]), stale generated files, and the codegen and upstream
/// libraries' errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Tool(#[from] acp_inject_tool_support::Error),
    #[error("generated files are stale:\n{}\nrun `cargo xtask codegen` and commit the result", list(.0))]
    Stale(Vec<PathBuf>),
    #[error(transparent)]
    Codegen(#[from] acp_inject_codegen::Error),
    #[error(transparent)]
    Upstream(#[from] acp_inject_upstream::Error),
}

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| format!("  {}", p.display())).collect::<Vec<_>>().join("\n")
}

impl Error {
    /// The same failure again, for a second caller of a step that ran once.
    pub fn again(&self) -> Self {
        Error::msg(self.to_string())
    }

    pub fn msg(message: impl Into<String>) -> Self {
        Error::Tool(ToolError::msg(message))
    }

    pub fn read(path: &Path, source: std::io::Error) -> Self {
        Error::Tool(ToolError::read(path, source))
    }

    pub fn write(path: &Path, source: std::io::Error) -> Self {
        Error::Tool(ToolError::write(path, source))
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }

    #[test]
    fn a_bad_value_is_a_usage_error() {
        use clap::Parser;
        let err = super::Cli::try_parse_from(["cargo xtask", "bench", "0"]).err().expect("0 rounds is refused");
        assert_eq!(err.exit_code(), 2);
        let err = super::Cli::try_parse_from(["cargo xtask", "test", "--stage", "lunch"]).err().expect("unknown stage");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("lunch"), "{err}");
    }
}
