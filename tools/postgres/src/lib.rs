//! acp-inject-postgres-harness: a private PostgreSQL 15 server for the tests and benchmarks
//! that need a real one. [`start`] gives a running server (dropping it stops it), and [`run`]
//! is `cargo xtask postgres -- CMD ARGS...`, which runs a command against it with
//! `ACP_INJECT_POSTGRES_URL` ([`URL_ENV`]) naming a fresh database.
//!
//! Nothing is installed on the system. The binaries are Debian 12's own packages
//! (`postgresql-15` and `postgresql-client-15`), fetched with `apt-get download` and unpacked
//! with `dpkg -x` into the cache (see [`acp_inject_tool_support::cache_dir`]), together with the packages of the
//! shared libraries they need that this machine lacks (`ldd` says which; on a fresh Debian 12
//! these are libLLVM, ICU, libxml2, libpq and a few more). Everything lives in
//! `<cache>/postgres/`:
//!
//! - `debs/`: the downloaded packages;
//! - `root/`: them unpacked: the programs in `root/usr/lib/postgresql/15/bin`, the libraries
//!   in `root/usr/lib/<triplet>` (the programs run with it in `LD_LIBRARY_PATH`);
//! - `installed`: the marker, one `package version` line per unpacked package, written last:
//!   with it (and every library found) a later run downloads nothing;
//! - `cluster-15/`: the data directory (`initdb`; `.acp-inject-ready` in it once complete);
//! - `run/`: the server's Unix socket and `server.log`, the log of the latest start;
//! - `lock`: held while a server runs, so that runs sharing the cache take turns.
//!
//! The server listens on 127.0.0.1 only, on a port free at start time, trusts every local
//! connection (no password), and keeps `fsync` on: durability benchmarks measure real
//! flushes. PostgreSQL refuses to run as root; as root, the server runs as `nobody`
//! (`setpriv`), which owns the cluster directory.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use acp_inject_tool_support::process::{self, human, run_ok, size_of, Echo};
use acp_inject_tool_support::Error;

/// The major version: the packages' names, the binaries' directory, the cluster's name.
const MAJOR: &str = "15";

/// The packages every install unpacks: the server and the client programs (psql, createdb).
const PACKAGES: [&str; 2] = ["postgresql-15", "postgresql-client-15"];

/// The superuser `initdb` creates, the user of every URL.
const SUPERUSER: &str = "postgres";

/// When set, [`start`] starts nothing and hands out this URL.
pub const URL_ENV: &str = "ACP_INJECT_POSTGRES_URL";

/// The environment variable naming the PEM certificate a started server serves TLS with (its
/// own root: self-signed for `127.0.0.1` and `localhost`, made at each start), for tests of
/// `sslmode=require`. Not set for a server of `ACP_INJECT_POSTGRES_URL`.
pub const CA_ENV: &str = "ACP_INJECT_POSTGRES_CA";

/// The file in the cluster directory that says `initdb` and our configuration finished.
const READY: &str = ".acp-inject-ready";

/// The account the server runs as when xtask runs as root.
const UNPRIVILEGED: &str = "nobody";

/// How long the server may take to start, or to stop.
const SERVER_TIMEOUT: Duration = Duration::from_secs(60);

/// A running server (or the one `ACP_INJECT_POSTGRES_URL` names); dropping it stops a server
/// [`start`] started.
pub struct Server {
    /// `postgres://postgres@127.0.0.1:PORT/postgres`: the maintenance database.
    pub url: String,
    /// The certificate the server serves TLS with (a server started here); see [`CA_ENV`].
    pub ca: Option<PathBuf>,
    running: Option<Running>,
}

impl Server {
    /// Sets [`URL_ENV`] (and [`CA_ENV`] when known) on a command.
    pub fn environment(&self, cmd: &mut Command) {
        cmd.env(URL_ENV, &self.url);
        if let Some(ca) = &self.ca {
            cmd.env(CA_ENV, ca);
        }
    }
}

/// What a server started here needs to be used and stopped.
struct Running {
    install: Install,
    runner: Runner,
    cluster: PathBuf,
    port: u16,
    postmaster: Child,
    /// The cache's lock, held until the server has stopped.
    _lock: File,
}

/// Starts a server: installs the binaries and initialises the cluster on first use, then runs
/// `postgres` on a free loopback port and waits until it accepts connections. With
/// `ACP_INJECT_POSTGRES_URL` set, starts nothing and returns that URL.
///
/// One server per cache runs at a time: a second `start` (another run, or this process while
/// its first [`Server`] lives) waits until the first is dropped. Tests share one server and
/// take a database each ([`Server::create_database`]).
pub fn start() -> Result<Server, Error> {
    if let Some(url) = std::env::var_os(URL_ENV).filter(|u| !u.is_empty()) {
        let url = url.into_string().map_err(|_| Error::msg(format!("{URL_ENV} is not UTF-8")))?;
        eprintln!("postgres: using the server of {URL_ENV} ({url}); nothing is started");
        return Ok(Server { url, ca: None, running: None });
    }
    let started = Instant::now();
    let dir = acp_inject_tool_support::cache_dir().join("postgres");
    std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, e))?;
    let lock = lock(&dir.join("lock"))?;
    let runner = Runner::current()?;
    let install = install(&dir, &runner)?;
    runner.make_reachable(&dir)?;
    let cluster = cluster(&dir, &install, &runner)?;
    clear_leftovers(&install, &runner, &cluster)?;
    let tls = certificate(&dir, &runner)?;
    let (port, postmaster) = launch(&dir, &install, &runner, &cluster, &tls)?;
    let url = url(port, "postgres");
    eprintln!("postgres: ready at {url} (TLS too) after {:.1} s", started.elapsed().as_secs_f64());
    Ok(Server { url, ca: Some(tls.cert), running: Some(Running { install, runner, cluster, port, postmaster, _lock: lock }) })
}

impl Server {
    /// Drops the database `name` if it exists (closing its connections) and creates it empty;
    /// returns its URL. With `ACP_INJECT_POSTGRES_URL`, creates nothing and returns that URL:
    /// it names the database to use.
    pub fn create_database(&self, name: &str) -> Result<String, Error> {
        let Some(running) = &self.running else {
            eprintln!("postgres: {URL_ENV} is set: database {name} is not created, its URL is used as it is");
            return Ok(self.url.clone());
        };
        check_database_name(name)?;
        let mut psql = running.install.command("psql");
        psql.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &self.url]);
        psql.args(["-c", &format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"), "-c", &format!("CREATE DATABASE \"{name}\"")]);
        run_ok(&mut psql)?;
        Ok(url(running.port, name))
    }
}

impl Drop for Server {
    /// Stops a server started here: `pg_ctl stop -m fast` (connections are closed, the data is
    /// flushed), and a kill if that fails.
    fn drop(&mut self) {
        let Some(mut running) = self.running.take() else { return };
        // pg_ctl would signal a dead server's unreaped PID and wait for the pid file to go.
        if let Ok(Some(status)) = running.postmaster.try_wait() {
            eprintln!("postgres: the server (PID {}) had already exited ({status}); nothing to stop", running.postmaster.id());
            return;
        }
        let mut stop = running.runner.command(&running.install, "pg_ctl");
        stop.arg("stop").arg("-D").arg(&running.cluster).args(["-m", "fast", "-w", "-t"]).arg(SERVER_TIMEOUT.as_secs().to_string());
        if !process::run(&mut stop, Echo::All).is_ok_and(|r| r.success()) {
            eprintln!("postgres: pg_ctl stop failed; killing the server (PID {})", running.postmaster.id());
            let _ = running.postmaster.kill();
        }
        let _ = running.postmaster.wait();
    }
}

/// `cargo xtask postgres -- CMD ARGS...`: starts the server, (re)creates the database
/// `acp_inject`, runs CMD with `ACP_INJECT_POSTGRES_URL` set to its URL, `ACP_INJECT_POSTGRES_CA`
/// to its TLS certificate (and the cached
/// PostgreSQL programs first in `PATH`, their libraries in `LD_LIBRARY_PATH`), stops the
/// server, and returns CMD's exit code. The shell that typed the command could not know the
/// URL, so an argument's `$ACP_INJECT_POSTGRES_URL` (or `${…}`), quoted there, is replaced here:
/// `cargo xtask postgres -- psql '$ACP_INJECT_POSTGRES_URL' -c 'select 1'` works.
pub fn run(command: &[OsString]) -> Result<u8, Error> {
    let (program, args) = command.split_first().ok_or_else(|| Error::msg("postgres: no command given"))?;
    let server = start()?;
    let url = server.create_database("acp_inject")?;
    let mut cmd = Command::new(program);
    cmd.args(args.iter().map(|a| substitute_url(a, &url))).env(URL_ENV, &url);
    if let Some(ca) = &server.ca {
        cmd.env(CA_ENV, ca);
    }
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(running) = &server.running {
        path = std::env::join_paths(std::iter::once(running.install.bin_dir()).chain(std::env::split_paths(&path)))
            .map_err(|e| Error::msg(format!("PATH: {e}")))?;
        cmd.env("PATH", &path);
        if let Some(libraries) = running.install.library_path(true) {
            cmd.env("LD_LIBRARY_PATH", libraries);
        }
    }
    match which(program, &path) {
        Some(found) => eprintln!("postgres: running {} ({})", program.to_string_lossy(), found.display()),
        None => eprintln!("postgres: running {} (not found in PATH)", program.to_string_lossy()),
    }
    let ran = process::run(&mut cmd, Echo::All);
    drop(server);
    let ran = ran?;
    eprintln!("postgres: {} exited ({})", program.to_string_lossy(), ran.status);
    Ok(exit_code(ran.status))
}

/// The argument with `$ACP_INJECT_POSTGRES_URL` and `${ACP_INJECT_POSTGRES_URL}` replaced by
/// the URL (an argument that is not UTF-8 is left as it is).
fn substitute_url(arg: &OsStr, url: &str) -> OsString {
    match arg.to_str() {
        Some(text) => text.replace(&format!("${{{URL_ENV}}}"), url).replace(&format!("${URL_ENV}"), url).into(),
        None => arg.to_owned(),
    }
}

/// The code a shell reports for a status: the exit code, or 128 + the signal that ended it.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        (None, None) => 1,
    }
}

/// Where `program` runs from with this `PATH` (a program with a `/` is itself).
fn which(program: &OsStr, path: &OsStr) -> Option<PathBuf> {
    let executable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if Path::new(program).components().count() > 1 {
        return Some(PathBuf::from(program)).filter(|p| executable(p));
    }
    std::env::split_paths(path).map(|dir| dir.join(program)).find(|p| executable(p))
}

/// A connection URL for a database of the server on `port`.
fn url(port: u16, database: &str) -> String {
    format!("postgres://{SUPERUSER}@127.0.0.1:{port}/{database}")
}

/// Database names are plain identifiers (lower-case letters, digits, `_`; at most 63 bytes),
/// so that they need no quoting in SQL nor escaping in a URL.
fn check_database_name(name: &str) -> Result<(), Error> {
    let plain = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let first = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_');
    if plain && first && name.len() <= 63 {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "database name {name:?}: use lower-case letters, digits and `_` (at most 63, not starting with a digit)"
        )))
    }
}

/// Takes the cache's lock (waiting, and saying so, while another run holds it).
fn lock(path: &Path) -> Result<File, Error> {
    let file = File::options().create(true).truncate(false).write(true).open(path).map_err(|e| Error::write(path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!("postgres: another run uses the server in this cache ({} is locked); waiting for it to finish", path.display());
            file.lock().map_err(|e| Error::write(path, e))?;
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::write(path, e)),
    }
    Ok(file)
}

// ---------------------------------------------------------------------------------------------
// The binaries

/// The unpacked packages: where the programs are and the library path they run with.
struct Install {
    /// `<cache>/postgres`: every command runs there (readable by the server's account).
    dir: PathBuf,
    /// `<cache>/postgres/root`.
    root: PathBuf,
}

impl Install {
    fn at(dir: &Path) -> Install {
        Install { dir: dir.to_owned(), root: dir.join("root") }
    }

    fn bin_dir(&self) -> PathBuf {
        self.root.join(format!("usr/lib/postgresql/{MAJOR}/bin"))
    }

    /// The server's loadable modules (`llvmjit.so`, the contrib extensions).
    fn module_dir(&self) -> PathBuf {
        self.root.join(format!("usr/lib/postgresql/{MAJOR}/lib"))
    }

    /// The unpacked library directories (`usr/lib/x86_64-linux-gnu`, and `lib/…` for the
    /// packages that still ship there).
    fn library_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        for base in [self.root.join("usr/lib"), self.root.join("lib")] {
            let Ok(entries) = std::fs::read_dir(&base) else { continue };
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains("-linux-") && e.path().is_dir())
                .map(|e| e.path())
                .collect();
            found.sort();
            dirs.extend(found);
        }
        dirs
    }

    /// `LD_LIBRARY_PATH` with the unpacked libraries: alone for our programs, which need
    /// nothing else; then the caller's (`inherit`) for a command of the user's.
    fn library_path(&self, inherit: bool) -> Option<OsString> {
        let mut dirs = self.library_dirs();
        if dirs.is_empty() {
            return None;
        }
        if inherit {
            dirs.extend(
                std::env::var_os("LD_LIBRARY_PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default(),
            );
        }
        std::env::join_paths(dirs).ok()
    }

    /// A command running one of the programs as the current user.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin_dir().join(program));
        self.environment(&mut cmd);
        cmd
    }

    fn environment(&self, cmd: &mut Command) {
        match self.library_path(false) {
            Some(path) => cmd.env("LD_LIBRARY_PATH", path),
            None => cmd.env_remove("LD_LIBRARY_PATH"),
        };
        cmd.current_dir(&self.dir);
    }

    /// Whether the programs this module runs are there.
    fn has_programs(&self) -> bool {
        ["postgres", "initdb", "pg_ctl", "psql"].iter().all(|p| self.bin_dir().join(p).is_file())
    }

    /// The shared libraries the programs and modules need that neither the machine nor the
    /// unpacked tree has, according to `ldd` (run once over every ELF file).
    fn missing_libraries(&self) -> Result<Missing, Error> {
        let mut files = Vec::new();
        for dir in [self.bin_dir(), self.module_dir()] {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            files.extend(entries.flatten().map(|e| e.path()).filter(|p| is_elf(p)));
        }
        files.sort();
        if files.is_empty() {
            return Err(Error::msg(format!("no programs in {}", self.bin_dir().display())));
        }
        let mut ldd = Command::new("ldd");
        ldd.args(&files);
        self.environment(&mut ldd);
        let out = ldd.output().map_err(|source| Error::Spawn { command: "ldd".into(), source })?;
        Ok(Missing::parse(&String::from_utf8_lossy(&out.stdout), &String::from_utf8_lossy(&out.stderr)))
    }
}

fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    path.is_file() && File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// What `ldd` could not find.
#[derive(Debug, Default, PartialEq)]
struct Missing {
    /// Each missing library (its soname) and the files that need it.
    sonames: BTreeMap<String, BTreeSet<String>>,
    /// Other failures, such as a library too old for a symbol version (`version … not found`).
    other: Vec<String>,
}

impl Missing {
    /// Reads `ldd FILE…`'s output: a `FILE:` line, then one indented line per library, with
    /// `soname => not found` for a missing one.
    fn parse(stdout: &str, stderr: &str) -> Missing {
        let mut missing = Missing::default();
        let mut file = "";
        for line in stdout.lines() {
            if !line.starts_with(char::is_whitespace) {
                file = line.strip_suffix(':').unwrap_or(line);
            } else if let Some((soname, _)) = line.trim().split_once(" => not found") {
                let name = Path::new(file).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                missing.sonames.entry(soname.trim().to_owned()).or_default().insert(name);
            }
        }
        missing.other = stderr.lines().filter(|l| l.contains("not found (required by")).map(str::to_owned).collect();
        missing
    }

    fn is_empty(&self) -> bool {
        self.sonames.is_empty() && self.other.is_empty()
    }

    fn describe(&self) -> String {
        let mut lines: Vec<String> = self
            .sonames
            .iter()
            .map(|(s, files)| format!("  {s} (needed by {})", files.iter().cloned().collect::<Vec<_>>().join(", ")))
            .collect();
        lines.extend(self.other.iter().map(|l| format!("  {l}")));
        lines.join("\n")
    }
}

/// The `installed` marker: the unpacked packages and their versions.
#[derive(Debug, PartialEq)]
struct Marker {
    packages: BTreeMap<String, String>,
}

impl Marker {
    fn render(&self) -> String {
        let mut text = String::from("# Unpacked into root/ by `cargo xtask` (tools/postgres): package version\n");
        for (name, version) in &self.packages {
            text.push_str(&format!("{name} {version}\n"));
        }
        text
    }

    /// The marker of a complete install, or `None` (a line that is not `package version`, or
    /// a package of [`PACKAGES`] missing).
    fn parse(text: &str) -> Option<Marker> {
        let mut packages = BTreeMap::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let mut words = line.split_whitespace();
            let (Some(name), Some(version), None) = (words.next(), words.next(), words.next()) else { return None };
            packages.insert(name.to_owned(), version.to_owned());
        }
        PACKAGES.iter().all(|p| packages.contains_key(*p)).then_some(Marker { packages })
    }

    /// `postgresql-15 15.20-0+deb12u1, …`.
    fn describe(&self) -> String {
        self.packages.iter().map(|(n, v)| format!("{n} {v}")).collect::<Vec<_>>().join(", ")
    }
}

/// The programs, from the cache when the marker says they are complete and `ldd` finds every
/// library; otherwise downloaded and unpacked afresh.
fn install(dir: &Path, runner: &Runner) -> Result<Install, Error> {
    let install = Install::at(dir);
    let marker_path = dir.join("installed");
    if let Some(marker) = std::fs::read_to_string(&marker_path).ok().and_then(|t| Marker::parse(&t)) {
        if install.has_programs() {
            let missing = install.missing_libraries()?;
            if missing.is_empty() {
                eprintln!("postgres: cached, nothing to download: {} in {}", marker.describe(), install.root.display());
                eprintln!("postgres: programs from {}", install.bin_dir().display());
                return Ok(install);
            }
            eprintln!(
                "postgres: ldd finds libraries missing (the machine or the cache lost them since the install); installing again:\n{}",
                missing.describe()
            );
        } else {
            eprintln!("postgres: the cached install at {} is incomplete; installing again", install.root.display());
        }
    }
    let started = Instant::now();
    eprintln!(
        "installing: PostgreSQL {MAJOR} (Debian's {} packages and the libraries this machine lacks) into {}, first use only: \
         about 19 MB to download on a machine with the libraries, 62 MB on a fresh Debian 12 (240 MB unpacked)",
        PACKAGES.join(" and "),
        dir.display()
    );
    let debs = dir.join("debs");
    remove(&marker_path)?;
    for path in [&install.root, &debs] {
        remove(path)?;
        std::fs::create_dir_all(path).map_err(|e| Error::write(path, e))?;
    }
    let mut apt = Apt { debs: debs.clone(), root: runner.account.is_some(), updated: false, downloaded: BTreeMap::new() };
    let version = apt.postgres_version()?;
    let wanted: Vec<String> = PACKAGES.iter().map(|p| format!("{p}={version}")).collect();
    apt.download(&wanted)?;
    let mut unpacked = BTreeMap::new();
    for name in PACKAGES {
        apt.unpack(name, &install.root, &mut unpacked)?;
    }
    // The libraries: each round adds the library packages the unpacked ones depend on that
    // the machine has not installed (or has in too old a version), and unpacks those that
    // provide a library `ldd` misses, until `ldd` misses none.
    loop {
        let missing = install.missing_libraries()?;
        let (absent, outdated) = apt.library_needs(&unpacked)?;
        let fetch: Vec<String> = absent.iter().chain(outdated.keys()).filter(|p| !apt.downloaded.contains_key(*p)).cloned().collect();
        if !fetch.is_empty() {
            apt.download(&fetch)?;
        }
        let mut chosen = Vec::new();
        for (name, why) in &outdated {
            if apt.downloaded.contains_key(name) {
                chosen.push((name.clone(), why.clone()));
            }
        }
        for name in absent.iter().filter(|n| !outdated.contains_key(*n)) {
            let Some((_, deb)) = apt.downloaded.get(name) else { continue };
            let provided: Vec<String> = deb_sonames(deb)?.into_iter().filter(|s| missing.sonames.contains_key(s)).collect();
            if !provided.is_empty() {
                chosen.push((name.clone(), format!("provides {}, which the machine lacks", provided.join(", "))));
            }
        }
        if chosen.is_empty() {
            if missing.is_empty() {
                break;
            }
            return Err(Error::msg(format!(
                "postgres: after unpacking {}, these libraries are still missing and no package the unpacked ones \
                 depend on provides them:\n{}",
                unpacked.keys().cloned().collect::<Vec<_>>().join(", "),
                missing.describe()
            )));
        }
        for (name, why) in chosen {
            eprintln!("postgres: {name}: {why}");
            apt.unpack(&name, &install.root, &mut unpacked)?;
        }
    }
    let marker = Marker { packages: unpacked };
    let tmp = marker_path.with_extension("tmp");
    std::fs::write(&tmp, marker.render()).map_err(|e| Error::write(&tmp, e))?;
    std::fs::rename(&tmp, &marker_path).map_err(|e| Error::write(&marker_path, e))?;
    eprintln!(
        "installed: {} into {} ({}; the packages in {}: {}) in {:.0} s",
        marker.describe(),
        install.root.display(),
        human(size_of(&install.root)),
        debs.display(),
        human(size_of(&debs)),
        started.elapsed().as_secs_f64()
    );
    eprintln!("postgres: programs from {}", install.bin_dir().display());
    Ok(install)
}

fn remove(path: &Path) -> Result<(), Error> {
    let result = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::write(path, e)),
        _ => Ok(()),
    }
}

/// Downloading and unpacking packages with apt and dpkg (nothing is installed).
struct Apt {
    debs: PathBuf,
    /// Whether we are root: then `apt-get update` may run when the package lists need it.
    root: bool,
    updated: bool,
    /// Package name → (version, file), for every package in `debs`.
    downloaded: BTreeMap<String, (String, PathBuf)>,
}

impl Apt {
    /// Debian's version of postgresql-15 in apt's lists (a PGDG build, when apt.postgresql.org
    /// is configured too, is passed over). Empty lists are filled first (`apt-get update`) when
    /// we are root.
    fn postgres_version(&mut self) -> Result<String, Error> {
        let package = PACKAGES[0];
        loop {
            let out = quiet(Command::new("apt-cache").args(["madison", package]))?;
            let versions: Vec<&str> = out.lines().filter_map(|l| l.split('|').nth(1)).map(str::trim).collect();
            if let Some(v) = versions.iter().find(|v| !v.contains("pgdg")) {
                return Ok((*v).to_owned());
            }
            if !versions.is_empty() {
                return Err(Error::msg(format!(
                    "apt knows only PGDG builds of {package} ({}); this needs Debian's",
                    versions.join(", ")
                )));
            }
            if !self.update(&format!("apt's package lists do not know {package}"))? {
                return Err(Error::msg(format!(
                    "apt's package lists do not know {package} even after `apt-get update`: this needs Debian 12 (bookworm) \
                     with its main archive in /etc/apt/sources.list(.d)"
                )));
            }
        }
    }

    /// Runs `apt-get update` once (as root); `Ok(false)` when it already ran. Not root: an
    /// error saying what to run.
    fn update(&mut self, why: &str) -> Result<bool, Error> {
        if self.updated {
            return Ok(false);
        }
        if !self.root {
            return Err(Error::msg(format!("{why}: run `sudo apt-get update` once (xtask runs it only as root), then again")));
        }
        eprintln!("postgres: {why}: running `apt-get update` first (we are root)");
        run_ok(Command::new("apt-get").arg("update").current_dir(&self.debs))?;
        self.updated = true;
        Ok(true)
    }

    /// `apt-get download`s the packages (`name` or `name=version`) into `debs`; when that
    /// fails (stale lists: the archive moved on), updates the lists and tries once more.
    fn download(&mut self, packages: &[String]) -> Result<(), Error> {
        let (debs, root) = (self.debs.clone(), self.root);
        let command = move |packages: &[String]| {
            let mut cmd = Command::new("apt-get");
            cmd.arg("download");
            if root {
                // As root, apt downloads as `_apt`, which cannot write into the cache; it would
                // say so and download as root anyway.
                cmd.args(["-o", "APT::Sandbox::User=root"]);
            }
            cmd.args(packages).current_dir(&debs);
            cmd
        };
        let ran = process::run(&mut command(packages), Echo::All)?;
        if !ran.success() {
            if !self.update(&format!("`{}` failed", ran.command))? {
                return Err(Error::Failed { command: ran.command, status: ran.status });
            }
            // The update may have brought a newer version than the one asked for.
            let names: Vec<String> = packages.iter().map(|p| p.split('=').next().unwrap_or(p).to_owned()).collect();
            run_ok(&mut command(&names))?;
        }
        self.scan()
    }

    /// Reads the name and version of every package in `debs`.
    fn scan(&mut self) -> Result<(), Error> {
        let entries = std::fs::read_dir(&self.debs).map_err(|e| Error::read(&self.debs, e))?;
        for path in entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "deb")) {
            if self.downloaded.values().any(|(_, p)| *p == path) {
                continue;
            }
            let fields = control_fields(&quiet(Command::new("dpkg-deb").arg("-f").arg(&path).args(["Package", "Version"]))?);
            if let (Some(name), Some(version)) = (fields.get("Package"), fields.get("Version")) {
                self.downloaded.insert(name.clone(), (version.clone(), path));
            }
        }
        Ok(())
    }

    /// `dpkg -x`s a downloaded package into `root` and records it in `unpacked`.
    fn unpack(&self, name: &str, root: &Path, unpacked: &mut BTreeMap<String, String>) -> Result<(), Error> {
        let (version, deb) = self.downloaded.get(name).ok_or_else(|| Error::msg(format!("apt-get download brought no {name}")))?;
        run_ok(Command::new("dpkg").arg("-x").arg(deb).arg(root))?;
        unpacked.insert(name.to_owned(), version.clone());
        Ok(())
    }

    /// The library packages (section `libs`) the unpacked packages depend on, not unpacked
    /// yet, that the machine has not installed (`absent`), or has in a version the dependency
    /// does not accept (`outdated`, with why). libc6 is the machine's, whatever its version.
    fn library_needs(&self, unpacked: &BTreeMap<String, String>) -> Result<(BTreeSet<String>, BTreeMap<String, String>), Error> {
        let mut deps: Vec<(String, Dependency)> = Vec::new();
        for name in unpacked.keys() {
            let Some((_, deb)) = self.downloaded.get(name) else { continue };
            let fields = control_fields(&quiet(Command::new("dpkg-deb").arg("-f").arg(deb).args(["Depends", "Pre-Depends"]))?);
            for field in fields.values() {
                deps.extend(Dependency::parse_list(field).into_iter().map(|d| (name.clone(), d)));
            }
        }
        deps.retain(|(_, d)| !unpacked.contains_key(&d.name) && d.name != "libc6");
        let names: BTreeSet<&str> = deps.iter().map(|(_, d)| d.name.as_str()).collect();
        let installed = installed_versions(&names)?;
        let mut absent = BTreeSet::new();
        let mut outdated = BTreeMap::new();
        for (by, dep) in &deps {
            match (installed.get(&dep.name), &dep.version) {
                (None, _) => {
                    absent.insert(dep.name.clone());
                }
                (Some(have), Some((op, wanted))) if !version_satisfies(have, op, wanted)? => {
                    let why = format!("the machine has {have}, {by} needs {op} {wanted}");
                    outdated.insert(dep.name.clone(), why);
                }
                _ => {}
            }
        }
        let libraries = library_packages(&absent.iter().chain(outdated.keys()).map(String::as_str).collect())?;
        absent.retain(|n| libraries.contains(n));
        outdated.retain(|n, _| libraries.contains(n));
        Ok((absent, outdated))
    }
}

/// A command's stdout, for queries (dpkg-query, apt-cache, dpkg-deb): not echoed.
fn quiet(cmd: &mut Command) -> Result<String, Error> {
    let out = cmd.output().map_err(|source| Error::Spawn { command: process::show(cmd), source })?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `Field: value` lines (dpkg-deb -f, apt-cache show) into a map; the last value of a field wins.
fn control_fields(text: &str) -> BTreeMap<String, String> {
    text.lines().filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect()
}

/// One dependency of a package's `Depends`: its first alternative, and the version relation.
#[derive(Debug, PartialEq)]
struct Dependency {
    name: String,
    version: Option<(String, String)>,
}

impl Dependency {
    /// `a (>= 1), b | c, d:any` → a (>= 1), b, d.
    fn parse_list(field: &str) -> Vec<Dependency> {
        field
            .split(',')
            .filter_map(|clause| {
                let first = clause.split('|').next()?.trim();
                let (name, rest) = first.split_once('(').map_or((first, ""), |(n, r)| (n, r));
                let name = name.trim().split(':').next()?.to_owned();
                let mut words = rest.trim_end_matches(')').split_whitespace();
                let version = match (words.next(), words.next()) {
                    (Some(op), Some(v)) => Some((op.to_owned(), v.to_owned())),
                    _ => None,
                };
                (!name.is_empty()).then_some(Dependency { name, version })
            })
            .collect()
    }
}

/// The installed version of each of these packages the machine has (`dpkg-query`; its
/// architecture or `all`).
fn installed_versions(names: &BTreeSet<&str>) -> Result<BTreeMap<String, String>, Error> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let arch = quiet(Command::new("dpkg").arg("--print-architecture"))?.trim().to_owned();
    let format = "${Package}\t${Architecture}\t${db:Status-Abbrev}\t${Version}\n";
    let out = quiet(Command::new("dpkg-query").args(["-W", "-f", format]).args(names))?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let ok = f.len() == 4 && (f[1] == arch || f[1] == "all") && f[2].trim() == "ii";
            ok.then(|| (f[0].to_owned(), f[3].to_owned()))
        })
        .collect())
}

/// Whether `have` stands in relation `op` (`>=`, `<<`, …) to `wanted` (`dpkg --compare-versions`).
fn version_satisfies(have: &str, op: &str, wanted: &str) -> Result<bool, Error> {
    let op = match op {
        ">=" => "ge",
        "<=" => "le",
        ">>" => "gt",
        "<<" => "lt",
        "=" => "eq",
        _ => return Ok(true),
    };
    let mut cmd = Command::new("dpkg");
    cmd.args(["--compare-versions", have, op, wanted]);
    Ok(cmd.status().map_err(|source| Error::Spawn { command: process::show(&cmd), source })?.success())
}

/// Which of these packages are shared libraries (Debian section `libs`, per `apt-cache show`).
fn library_packages(names: &BTreeSet<&str>) -> Result<BTreeSet<String>, Error> {
    if names.is_empty() {
        return Ok(BTreeSet::new());
    }
    let out = quiet(Command::new("apt-cache").args(["show", "--no-all-versions"]).args(names))?;
    Ok(out
        .split("\n\n")
        .map(control_fields)
        .filter(|f| f.get("Section").is_some_and(|s| s == "libs" || s.ends_with("/libs")))
        .filter_map(|f| f.get("Package").cloned())
        .collect())
}

/// The file names of the shared libraries in a package (`dpkg-deb -c`), e.g. `libicuuc.so.72`.
fn deb_sonames(deb: &Path) -> Result<Vec<String>, Error> {
    let out = quiet(Command::new("dpkg-deb").arg("-c").arg(deb))?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter_map(|p| Path::new(p).file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n.contains(".so"))
        .collect())
}

// ---------------------------------------------------------------------------------------------
// The account, the cluster, the server process

/// Who runs `initdb`, `postgres` and `pg_ctl`: the current user, or `nobody` when that is root.
struct Runner {
    /// `Some` when we are root: the unprivileged account (name, uid, gid).
    account: Option<(String, u32, u32)>,
}

impl Runner {
    fn current() -> Result<Runner, Error> {
        let status = std::fs::read_to_string("/proc/self/status").map_err(|e| Error::read(Path::new("/proc/self/status"), e))?;
        let euid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u32>().ok());
        if euid != Some(0) {
            return Ok(Runner { account: None });
        }
        let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| Error::read(Path::new("/etc/passwd"), e))?;
        let account = passwd_entry(&passwd, UNPRIVILEGED).ok_or_else(|| {
            Error::msg(format!("PostgreSQL will not run as root, and there is no `{UNPRIVILEGED}` account to run it as"))
        })?;
        Ok(Runner { account: Some(account) })
    }

    fn uid(&self) -> Option<u32> {
        self.account.as_ref().map(|(_, uid, _)| *uid)
    }

    /// A command running one of the programs as the server's account.
    fn command(&self, install: &Install, program: &str) -> Command {
        let Some((_, uid, gid)) = &self.account else { return install.command(program) };
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid", &uid.to_string(), "--regid", &gid.to_string(), "--init-groups", "--"])
            .arg(install.bin_dir().join(program));
        install.environment(&mut cmd);
        cmd
    }

    /// Hands `path` to the server's account (when that is not us).
    fn own(&self, path: &Path) -> Result<(), Error> {
        match &self.account {
            Some((_, uid, gid)) => std::os::unix::fs::chown(path, Some(*uid), Some(*gid)).map_err(|e| Error::write(path, e)),
            None => Ok(()),
        }
    }

    /// As root: lets `nobody` reach `<cache>/postgres` and the programs, by adding the
    /// others-may-enter bit (o+x, no listing, no reading) to each directory on the way that
    /// lacks it, saying so.
    fn make_reachable(&self, dir: &Path) -> Result<(), Error> {
        let Some((name, ..)) = &self.account else { return Ok(()) };
        let root = dir.join("root");
        for path in std::iter::once(root.as_path()).chain(dir.ancestors()) {
            let meta = std::fs::metadata(path).map_err(|e| Error::read(path, e))?;
            let mode = meta.permissions().mode();
            if mode & 0o001 == 0 {
                eprintln!(
                    "postgres: {}: adding o+x (others may pass through, not list or read) so that `{name}`, the server's \
                     account, reaches the cluster",
                    path.display()
                );
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o001)).map_err(|e| Error::write(path, e))?;
            }
        }
        Ok(())
    }
}

/// The uid and gid of an account in `/etc/passwd`'s text.
fn passwd_entry(passwd: &str, name: &str) -> Option<(String, u32, u32)> {
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 4 && f[0] == name).then(|| Some((name.to_owned(), f[2].parse().ok()?, f[3].parse().ok()?))).flatten()
    })
}

/// The cluster directory, initialised on first use (and again when an earlier `initdb` did
/// not finish, or another account owns it).
fn cluster(dir: &Path, install: &Install, runner: &Runner) -> Result<PathBuf, Error> {
    let cluster = dir.join(format!("cluster-{MAJOR}"));
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).map_err(|e| Error::write(&run_dir, e))?;
    runner.own(&run_dir)?;
    let owner = std::fs::metadata(&cluster).ok().map(|m| m.uid());
    if cluster.join(READY).is_file() && cluster.join("PG_VERSION").is_file() {
        match (runner.uid(), owner) {
            (Some(uid), Some(owner)) if uid != owner => {
                eprintln!(
                    "postgres: {} belongs to uid {owner}, the server runs as uid {uid}: initialising it again",
                    cluster.display()
                )
            }
            _ => return Ok(cluster),
        }
    } else if cluster.exists() {
        eprintln!("postgres: {} is incomplete (an earlier initdb did not finish): initialising it again", cluster.display());
    }
    remove(&cluster)?;
    std::fs::create_dir(&cluster).map_err(|e| Error::write(&cluster, e))?;
    std::fs::set_permissions(&cluster, std::fs::Permissions::from_mode(0o700)).map_err(|e| Error::write(&cluster, e))?;
    runner.own(&cluster)?;
    eprintln!("postgres: initialising the cluster {} (first use only)", cluster.display());
    let mut initdb = runner.command(install, "initdb");
    initdb.arg("-D").arg(&cluster).args(["-U", SUPERUSER, "--auth=trust", "--no-locale", "-E", "UTF8", "--no-instructions"]);
    run_ok(&mut initdb)?;
    append(&cluster.join("postgresql.conf"), &settings(&run_dir))?;
    let hba = cluster.join("pg_hba.conf");
    let rules = "# Written by `cargo xtask` (tools/postgres): the server listens on 127.0.0.1 only.\n\
                 # TYPE  DATABASE  USER  ADDRESS       METHOD\n\
                 local   all       all                 trust\n\
                 host    all       all   127.0.0.1/32  trust\n";
    std::fs::write(&hba, rules).map_err(|e| Error::write(&hba, e))?;
    let ready = cluster.join(READY);
    std::fs::write(&ready, "initdb and the settings of tools/postgres are complete\n").map_err(|e| Error::write(&ready, e))?;
    Ok(cluster)
}

fn append(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut file = File::options().append(true).open(path).map_err(|e| Error::write(path, e))?;
    file.write_all(text.as_bytes()).map_err(|e| Error::write(path, e))
}

/// What `postgresql.conf` gets after initdb's defaults (the port is given at each start).
fn settings(socket_dir: &Path) -> String {
    let socket = if socket_fits(socket_dir) {
        conf_string(&socket_dir.to_string_lossy())
    } else {
        eprintln!("postgres: {} is too long for a Unix socket path: TCP only", socket_dir.display());
        "''".into()
    };
    format!(
        "\n# Added by `cargo xtask` (tools/postgres): a private server for tests and benchmarks.\n\
         listen_addresses = '127.0.0.1'\n\
         unix_socket_directories = {socket}\n\
         # Durability is measured: every commit is flushed.\n\
         fsync = on\n\
         synchronous_commit = on\n\
         full_page_writes = on\n\
         shared_buffers = 32MB\n"
    )
}

/// Whether a socket in `dir` (`dir/.s.PGSQL.PORT`) fits the 108 bytes of `sun_path`.
fn socket_fits(dir: &Path) -> bool {
    dir.as_os_str().len() + "/.s.PGSQL.65535".len() < 108
}

/// A `postgresql.conf` string literal.
fn conf_string(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}

/// The PIDs of the processes running this install's `postgres` (as far as we may look).
fn our_postgres_processes(install: &Install) -> Vec<u32> {
    let exe = install.bin_dir().join("postgres");
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe))
        .collect();
    pids.sort();
    pids
}

/// Clears what a crashed earlier run left (we hold the lock, so nothing else uses the
/// cluster): a server still running (stopped), its children still exiting after it was killed
/// (waited for, then killed), and a `postmaster.pid` whose PID now belongs to another process
/// (removed; one whose PID is gone is PostgreSQL's to clear, with the shared memory it names).
fn clear_leftovers(install: &Install, runner: &Runner, cluster: &Path) -> Result<(), Error> {
    let pid_file = cluster.join("postmaster.pid");
    let recorded = std::fs::read_to_string(&pid_file).ok().map(|t| PidFile::parse(&t));
    let running = our_postgres_processes(install);
    if let Some(Some(PidFile { pid, .. })) = recorded {
        if running.contains(&pid) {
            eprintln!("postgres: the server of an earlier run is still running (PID {pid}); stopping it");
            let mut stop = runner.command(install, "pg_ctl");
            stop.arg("stop").arg("-D").arg(cluster).args(["-m", "fast", "-w", "-t", "30"]);
            let _ = process::run(&mut stop, Echo::All);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = our_postgres_processes(install);
    if !left.is_empty() {
        eprintln!("postgres: waiting for {} leftover server process(es) of an earlier run to exit: {left:?}", left.len());
    }
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        left = our_postgres_processes(install);
    }
    for pid in left {
        let mut kill = runner.command(install, "pg_ctl");
        kill.args(["kill", "KILL", &pid.to_string()]);
        let _ = process::run(&mut kill, Echo::All);
    }
    match std::fs::read_to_string(&pid_file).ok().map(|t| PidFile::parse(&t)) {
        // PostgreSQL takes a PID that exists for a server still running, and would not start.
        Some(Some(PidFile { pid, .. })) if Path::new(&format!("/proc/{pid}")).exists() => {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let what = if process_state(&stat) == Some('Z') {
                "a dead process nobody has reaped: the server of a crashed run"
            } else {
                "now another process"
            };
            eprintln!("postgres: removing the stale {} (PID {pid} is {what})", pid_file.display());
            remove(&pid_file)?;
        }
        Some(None) => {
            eprintln!("postgres: removing the unreadable {} (a start cut short)", pid_file.display());
            remove(&pid_file)?;
        }
        Some(Some(PidFile { pid, .. })) => {
            eprintln!("postgres: {} is stale (PID {pid} is gone): the server clears it as it starts", pid_file.display());
        }
        None => {}
    }
    Ok(())
}

/// The state letter of `/proc/PID/stat` (`Z`: a zombie), after the parenthesised name.
fn process_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// What `postmaster.pid` says: the server's PID and whether it accepts connections (its
/// 8th line, `ready`).
#[derive(Debug, PartialEq)]
struct PidFile {
    pid: u32,
    ready: bool,
}

impl PidFile {
    fn parse(text: &str) -> Option<PidFile> {
        let lines: Vec<&str> = text.lines().collect();
        let pid = lines.first()?.trim().parse().ok()?;
        Some(PidFile { pid, ready: lines.get(7).is_some_and(|l| l.trim() == "ready") })
    }
}

/// A port nobody listens on now (the kernel's choice for 127.0.0.1:0).
fn free_port() -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error::msg(format!("cannot bind 127.0.0.1:0: {e}")))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| Error::msg(format!("cannot read the bound port: {e}")))
}

/// Runs `postgres` (our child, so that a Ctrl-C reaches it too and it shuts down) with its
/// output in `run/server.log`, and waits until it accepts connections. When another program
/// took the port between our choice and the server's bind, tries another.
/// The server's TLS certificate and key files.
struct Tls {
    cert: PathBuf,
    key: PathBuf,
}

/// A self-signed certificate for `127.0.0.1` and `localhost`, made at each start into
/// `<cache>/postgres/run/tls/` (the key readable by the server's account alone, as the server
/// requires).
fn certificate(dir: &Path, runner: &Runner) -> Result<Tls, Error> {
    let tls_dir = dir.join("run/tls");
    std::fs::create_dir_all(&tls_dir).map_err(|e| Error::write(&tls_dir, e))?;
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .map_err(|e| Error::msg(format!("cannot make the server's TLS certificate: {e}")))?;
    let (cert, key) = (tls_dir.join("server.crt"), tls_dir.join("server.key"));
    std::fs::write(&cert, made.cert.pem()).map_err(|e| Error::write(&cert, e))?;
    let _ = std::fs::remove_file(&key);
    std::fs::write(&key, made.key_pair.serialize_pem()).map_err(|e| Error::write(&key, e))?;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).map_err(|e| Error::write(&key, e))?;
    for path in [&tls_dir, &cert, &key] {
        runner.own(path)?;
    }
    Ok(Tls { cert, key })
}

fn launch(dir: &Path, install: &Install, runner: &Runner, cluster: &Path, tls: &Tls) -> Result<(u16, Child), Error> {
    let log_path = dir.join("run/server.log");
    for attempt in 1.. {
        match launch_on(&log_path, free_port()?, install, runner, cluster, tls) {
            Err(e) if attempt < 3 && std::fs::read_to_string(&log_path).is_ok_and(|l| l.contains("could not bind")) => {
                eprintln!(
                    "postgres: {e}
postgres: the port was taken meanwhile; trying another"
                );
            }
            result => return result,
        }
    }
    unreachable!("the loop returns by its third attempt")
}

fn launch_on(
    log_path: &Path,
    port: u16,
    install: &Install,
    runner: &Runner,
    cluster: &Path,
    tls: &Tls,
) -> Result<(u16, Child), Error> {
    let log = File::create(log_path).map_err(|e| Error::write(log_path, e))?;
    let mut cmd = runner.command(install, "postgres");
    cmd.arg("-D").arg(cluster).args(["-p", &port.to_string()]);
    // TLS for the clients that ask (`sslmode=require`); the others connect as before.
    cmd.args(["-c", "ssl=on", "-c"]).arg(format!("ssl_cert_file={}", tls.cert.display()));
    cmd.arg("-c").arg(format!("ssl_key_file={}", tls.key.display()));
    let shown = process::show(&cmd);
    eprintln!("$ {shown}");
    eprintln!("postgres: the server's log: {}", log_path.display());
    let err = log.try_clone().map_err(|e| Error::write(log_path, e))?;
    let mut child =
        cmd.stdin(Stdio::null()).stdout(log).stderr(err).spawn().map_err(|source| Error::Spawn { command: shown.clone(), source })?;
    let deadline = Instant::now() + SERVER_TIMEOUT;
    let pid_file = cluster.join("postmaster.pid");
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::msg(format!(
                "the server exited ({status}) while starting; the end of its log:\n{}",
                log_tail(log_path)
            )));
        }
        let ready = std::fs::read_to_string(&pid_file).ok().and_then(|t| PidFile::parse(&t));
        if ready.is_some_and(|p| p.pid == child.id() && p.ready) {
            return Ok((port, child));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::msg(format!(
                "the server was not ready after {} s; the end of its log:\n{}",
                SERVER_TIMEOUT.as_secs(),
                log_tail(log_path)
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last lines of the server's log, indented.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_superuser_loopback_port_and_database() {
        assert_eq!(url(54321, "acp_inject"), "postgres://postgres@127.0.0.1:54321/acp_inject");
    }

    #[test]
    fn database_names_are_plain_identifiers() {
        for good in ["acp_inject", "_t1", "a"] {
            assert!(check_database_name(good).is_ok(), "{good}");
        }
        for bad in ["", "1abc", "Acp", "a-b", "a\"b", "a b", &"x".repeat(64)] {
            assert!(check_database_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_marker_round_trips_and_an_incomplete_one_is_refused() {
        let packages: BTreeMap<String, String> =
            [("postgresql-15", "15.20-0+deb12u1"), ("postgresql-client-15", "15.20-0+deb12u1"), ("libllvm14", "1:14.0.6-12")]
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect();
        let marker = Marker { packages };
        assert_eq!(Marker::parse(&marker.render()), Some(marker));
        assert_eq!(Marker::parse("postgresql-15 15.20-0+deb12u1\n"), None, "the client package is missing");
        assert_eq!(Marker::parse("postgresql-15 15.20\npostgresql-client-15\n"), None, "a line without a version");
        assert_eq!(Marker::parse(""), None);
    }

    /// A marker without the programs it lists is not an install (a cache cut short or
    /// emptied by hand): `has_programs` is what sends `install` to download again.
    #[test]
    fn an_install_without_its_programs_is_incomplete() {
        let dir = std::env::temp_dir().join(format!("acp-inject-postgres-test-{}", std::process::id()));
        let install = Install::at(&dir);
        assert!(!install.has_programs());
        std::fs::create_dir_all(install.bin_dir()).unwrap();
        for p in ["postgres", "initdb", "pg_ctl"] {
            std::fs::write(install.bin_dir().join(p), "").unwrap();
        }
        assert!(!install.has_programs(), "psql is missing");
        std::fs::write(install.bin_dir().join("psql"), "").unwrap();
        assert!(install.has_programs());
        assert_eq!(install.library_dirs(), Vec::<PathBuf>::new());
        std::fs::create_dir_all(install.root.join("usr/lib/x86_64-linux-gnu")).unwrap();
        assert_eq!(install.library_dirs(), vec![install.root.join("usr/lib/x86_64-linux-gnu")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_what_ldd_misses() {
        let stdout = "/c/bin/postgres:\n\tlinux-vdso.so.1 (0x00007ffd)\n\tlibicuuc.so.72 => not found\n\
                      \tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x00007f)\n\
                      /c/lib/llvmjit.so:\n\tlibLLVM-14.so.1 => not found\n\tlibicuuc.so.72 => not found\n\
                      /c/lib/plpgsql.so:\n\tstatically linked\n";
        let stderr = "ldd: warning: you do not have execution permission for `/c/lib/llvmjit.so'\n\
                      /c/bin/psql: /lib/x86_64-linux-gnu/libpq.so.5: version `LIBPQ_9' not found (required by /c/bin/psql)\n";
        let missing = Missing::parse(stdout, stderr);
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(missing.sonames.len(), 2);
        assert_eq!(missing.sonames["libicuuc.so.72"], names(&["postgres", "llvmjit.so"]));
        assert_eq!(missing.sonames["libLLVM-14.so.1"], names(&["llvmjit.so"]));
        assert_eq!(missing.other.len(), 1);
        assert!(Missing::parse("/c/bin/postgres:\n\tlibc.so.6 => /lib/libc.so.6 (0x1)\n", "").is_empty());
    }

    #[test]
    fn reads_a_depends_field() {
        let deps =
            Dependency::parse_list("locales | locales-all, libpq5 (>= 15.20), debconf (>= 0.5) | debconf-2.0, perl:any, libllvm14");
        let names: Vec<&str> = deps.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["locales", "libpq5", "debconf", "perl", "libllvm14"]);
        assert_eq!(deps[1].version, Some((">=".into(), "15.20".into())));
        assert_eq!(deps[4].version, None);
    }

    #[test]
    fn reads_the_pid_file_and_its_ready_line() {
        let starting = "1234\n/c/cluster-15\n1700000000\n5432\n/c/run\n127.0.0.1\n  5432001    65538\nstarting\n";
        assert_eq!(PidFile::parse(starting), Some(PidFile { pid: 1234, ready: false }));
        assert_eq!(PidFile::parse(&starting.replace("starting", "ready   ")), Some(PidFile { pid: 1234, ready: true }));
        assert_eq!(PidFile::parse(""), None);
        assert_eq!(PidFile::parse("12x\n"), None);
    }

    #[test]
    fn reads_a_process_state() {
        assert_eq!(process_state("9316 (postgres) Z 1 9316 9316 0 -1"), Some('Z'));
        assert_eq!(process_state("42 (a (b) c) S 1 42"), Some('S'));
        assert_eq!(process_state(""), None);
    }

    #[test]
    fn finds_the_unprivileged_account() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
        assert_eq!(passwd_entry(passwd, "nobody"), Some(("nobody".into(), 65534, 65534)));
        assert_eq!(passwd_entry(passwd, "postgres"), None);
    }

    #[test]
    fn settings_quote_paths_and_fall_back_to_tcp_for_long_ones() {
        assert_eq!(conf_string(r"/c/it's\here"), r"'/c/it''s\\here'");
        assert!(socket_fits(Path::new("/root/.cache/acp-inject/postgres/run")));
        let long = PathBuf::from(format!("/{}", "d".repeat(100)));
        assert!(!socket_fits(&long));
        assert!(settings(&long).contains("unix_socket_directories = ''"));
        assert!(settings(Path::new("/c/run")).contains("unix_socket_directories = '/c/run'\n"));
        assert!(settings(Path::new("/c/run")).contains("fsync = on\n"));
    }

    #[test]
    fn exit_codes_are_what_a_shell_reports() {
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137, "killed by SIGKILL");
    }

    #[test]
    fn the_url_variable_is_substituted_in_arguments() {
        let url = "postgres://postgres@127.0.0.1:5/acp_inject";
        assert_eq!(substitute_url(OsStr::new("$ACP_INJECT_POSTGRES_URL"), url), url);
        assert_eq!(substitute_url(OsStr::new("--url=${ACP_INJECT_POSTGRES_URL}"), url), OsString::from(format!("--url={url}")));
        assert_eq!(substitute_url(OsStr::new("$HOME"), url), "$HOME");
    }

    #[test]
    fn which_follows_path() {
        let sh = which(OsStr::new("sh"), OsStr::new("/nonexistent:/bin:/usr/bin")).expect("sh is in /bin");
        assert!(sh.ends_with("sh"));
        assert_eq!(which(OsStr::new("no-such-program-here"), OsStr::new("/bin")), None);
        assert_eq!(which(OsStr::new("/bin/sh"), OsStr::new("")), Some(PathBuf::from("/bin/sh")));
    }
}
