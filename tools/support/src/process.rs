//! Running child processes so that the user sees what happens while it happens.
//!
//! Every command is printed before it starts. Its output is read line by line and echoed at
//! once (and kept, for the callers that read a result from it); when a command prints nothing
//! for [`QUIET_LIMIT`], a line says it is still running and for how long. Nothing is buffered
//! until the end: a long build or download shows up as it happens. When both streams are
//! shown, the child writes them into one pipe, so their lines keep the child's order.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Error;

/// After this long without output, a "still running" line is printed (and again after each
/// further period of silence).
pub const QUIET_LIMIT: Duration = Duration::from_secs(30);

/// A command that runs at least this long is followed by a line saying how long it took, so a
/// stage's log shows where its time went.
pub const TOOK_LIMIT: Duration = Duration::from_secs(10);

/// The start of a command line, for the progress lines that repeat it.
fn brief(command: &str) -> &str {
    const SHOWN: usize = 160;
    match command.char_indices().nth(SHOWN) {
        Some((at, _)) => &command[..at],
        None => command,
    }
}

/// Which of the child's streams are shown.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// Both streams, merged in the child's order (kept in [`Ran::stdout`]).
    All,
    /// Only stderr; stdout is machine output (JSON) that the caller reads.
    StderrOnly,
}

/// A finished command: its status and everything it printed.
pub struct Ran {
    pub command: String,
    pub status: ExitStatus,
    /// With [`Echo::All`], both streams in order; with [`Echo::StderrOnly`], stdout alone.
    pub stdout: String,
    /// With [`Echo::StderrOnly`], stderr; empty with [`Echo::All`].
    pub stderr: String,
}

impl Ran {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// `Ok` when the command succeeded, else an error naming it.
    pub fn check(self) -> Result<Self, Error> {
        if self.success() {
            Ok(self)
        } else {
            Err(Error::Failed { command: self.command, status: self.status })
        }
    }
}

/// The command as a person would type it: explicit environment, program, arguments, and the
/// directory when it is not the repository root.
pub fn show(cmd: &Command) -> String {
    let quote = |s: &OsStr| {
        let s = s.to_string_lossy();
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%[]".contains(c)) {
            s.into_owned()
        } else {
            // Shown on one line: a value with newlines (an environment variable holding a
            // command, one argument per line) is shown with `\n`s.
            format!("'{}'", s.replace('\'', r"'\''").replace('\n', "\\n"))
        }
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(dir) = cmd.get_current_dir() {
        if dir != crate::root() {
            let shown = dir.strip_prefix(crate::root()).unwrap_or(dir);
            parts.push(format!("(in {})", if shown.as_os_str().is_empty() { Path::new(".") } else { shown }.display()));
        }
    }
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            parts.push(format!("{}={}", k.to_string_lossy(), quote(v)));
        }
    }
    parts.push(quote(cmd.get_program()));
    parts.extend(cmd.get_args().map(quote));
    parts.join(" ")
}

enum Line {
    Out(String),
    Err(String),
}

fn pump<R: Read + Send + 'static>(pipe: R, tx: mpsc::Sender<Line>, wrap: fn(String) -> Line) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).split(b'\n') {
            let Ok(line) = line else { break };
            let line = String::from_utf8_lossy(&line).trim_end_matches('\r').to_owned();
            if tx.send(wrap(line)).is_err() {
                break;
            }
        }
    })
}

/// Runs the command in the repository root (unless it has a directory), streaming its output.
/// Returns the finished command whatever its exit status; an error only when it cannot start.
pub fn run(cmd: &mut Command, echo: Echo) -> Result<Ran, Error> {
    if cmd.get_current_dir().is_none() {
        cmd.current_dir(crate::root());
    }
    let command = show(cmd);
    eprintln!("$ {command}");
    let started = Instant::now();
    let spawn_error = |source| Error::Spawn { command: command.clone(), source };
    cmd.stdin(Stdio::null());
    let (tx, rx) = mpsc::channel();
    let (mut child, readers) = match echo {
        Echo::All => {
            let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
            cmd.stdout(writer.try_clone().map_err(spawn_error)?).stderr(writer);
            let child = cmd.spawn();
            // The command holds the pipe's write ends until told otherwise; the reader only sees
            // the end of the output once every write end is closed.
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            (child.map_err(spawn_error)?, vec![pump(reader, tx, Line::Out)])
        }
        Echo::StderrOnly => {
            let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(spawn_error)?;
            let readers = vec![
                pump(child.stdout.take().expect("piped stdout"), tx.clone(), Line::Out),
                pump(child.stderr.take().expect("piped stderr"), tx, Line::Err),
            ];
            (child, readers)
        }
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let mut last = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Line::Out(line)) => {
                if echo == Echo::All {
                    println!("{line}");
                    let _ = std::io::stdout().flush();
                }
                stdout.push_str(&line);
                stdout.push('\n');
                last = Instant::now();
            }
            Ok(Line::Err(line)) => {
                eprintln!("{line}");
                stderr.push_str(&line);
                stderr.push('\n');
                last = Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if last.elapsed() >= QUIET_LIMIT {
                    eprintln!("  … still running ({:.0} s so far): {}", started.elapsed().as_secs_f64(), brief(&command));
                    last = Instant::now();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait().map_err(spawn_error)?;
    if started.elapsed() >= TOOK_LIMIT {
        eprintln!("  … took {:.0} s: {}", started.elapsed().as_secs_f64(), brief(&command));
    }
    Ok(Ran { command, status, stdout, stderr })
}

/// Runs the command and fails unless it succeeds.
pub fn run_ok(cmd: &mut Command) -> Result<Ran, Error> {
    run(cmd, Echo::All)?.check()
}

/// Total size of the files below `path` (symbolic links are not followed), for "what was
/// installed and how big".
pub fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path).map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum()).unwrap_or(0)
}

/// `1234567` → `"1.2 MB"`.
pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.0} MB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.0} kB", b as f64 / 1024.0),
    }
}
