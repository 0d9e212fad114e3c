//! `acp-inject-timeline`: the guide's picture of a session's timeline, from a real run.
//!
//! ```text
//! acp-inject-timeline --agent PATH/TO/acp-inject-agent --out DIR   # record, then draw
//! acp-inject-timeline --from DIR/timeline.json --out DIR          # draw a recording again
//! ```
//!
//! Recording ([`record`]) drives the reference agent (`crates/reference-agent`, its scripted
//! model with `--delay-ms`) through the Rust client (`acp-inject-transport`) over stdio and
//! writes every timestamped step to `timeline.json` in `DIR`; drawing ([`draw`]) turns that file
//! into `timeline.svg` beside it. `cargo xtask docs` runs it for the guide (`docs/guide/`). A tool, not part
//! of the product: it depends on the product crates, none of them on it.

mod draw;
mod record;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use acp_inject_tool_support::Error;
use clap::Parser;

/// Records a scripted session against the reference agent and draws its timeline.
#[derive(Parser)]
#[command(name = "acp-inject-timeline")]
struct Args {
    /// The reference agent's binary (`acp-inject-agent`) to record against.
    #[arg(long, value_name = "PATH", required_unless_present = "from")]
    agent: Option<PathBuf>,
    /// The scripted model's delay per step, in milliseconds (a turn is 8 steps).
    #[arg(long, value_name = "MS", default_value_t = 150)]
    delay_ms: u64,
    /// Draw this recording again instead of recording.
    #[arg(long, value_name = "JSON", conflicts_with = "agent")]
    from: Option<PathBuf>,
    /// Where timeline.json and timeline.svg go.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("acp-inject-timeline: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Error> {
    std::fs::create_dir_all(&args.out).map_err(|e| Error::write(&args.out, e))?;
    let recording = match (&args.from, &args.agent) {
        (Some(from), _) => {
            let text = std::fs::read_to_string(from).map_err(|e| Error::read(from, e))?;
            serde_json::from_str(&text).map_err(|e| Error::msg(format!("{}: {e}", from.display())))?
        }
        (None, Some(agent)) => {
            let command = vec![agent.display().to_string(), "--delay-ms".into(), args.delay_ms.to_string()];
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| Error::msg(format!("cannot start the async runtime: {e}")))?;
            let recording = runtime.block_on(record::record(&command, args.delay_ms))?;
            let json = serde_json::to_string_pretty(&recording).map_err(|e| Error::msg(e.to_string()))? + "\n";
            write(&args.out.join("timeline.json"), &json)?;
            recording
        }
        (None, None) => return Err(Error::msg("give --agent or --from")),
    };
    write(&args.out.join("timeline.svg"), &draw::svg(&recording))?;
    let turns = record::turns(&recording);
    eprintln!(
        "timeline: {} events, {} turns, {:.0} ms: {}",
        recording.events.len(),
        turns.len(),
        recording.events.last().map_or(0.0, record::Event::t),
        args.out.join("timeline.svg").display()
    );
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::write(path, e))
}
