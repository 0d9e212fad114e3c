//! Durability for the agent core (R-DELIV-2: an accepted inject is never lost).
//!
//! [`DurableAgent`] wraps an [`Agent`] and a [`FileStore`]. After every call that changed
//! the state, it writes the whole snapshot to disk *before* handing back the outputs, so a
//! client never sees an accept response (`{messageId}`) for a change that is not durable.
//!
//! The store is one file replaced atomically: write `<file>.tmp`, `fsync` it, `rename` over
//! the file, `fsync` the directory. Why not an append-only journal: a snapshot is always a
//! complete, self-describing state (no replay, no compaction, no torn-tail handling), and its
//! cost is proportional to what is pending, which the core keeps small and bounded
//! (remembered ids are capped). A crash at any instant leaves either the old or the new file.
//!
//! If a write fails, the wrapper stops accepting input ([`StoreError::Poisoned`]): the
//! in-memory state is ahead of the disk, so the host must restart from the store.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use acp_inject_core::agent::{Agent, AgentConfig, HostError, Output, RuntimeEvent};

/// A store error. Nothing was released to the client.
#[derive(Debug)]
pub enum StoreError {
    Io(io::Error),
    /// The snapshot on disk cannot be restored.
    Corrupt(String),
    /// An earlier write failed; restart from the store.
    Poisoned,
    /// The runtime event itself was refused (nothing changed, nothing written).
    Host(HostError),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Io(e) => write!(f, "store I/O error: {e}"),
            StoreError::Corrupt(e) => write!(f, "the stored snapshot is unusable: {e}"),
            StoreError::Poisoned => f.write_str("an earlier store write failed; restart from the store"),
            StoreError::Host(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<io::Error> for StoreError {
    fn from(e: io::Error) -> Self {
        StoreError::Io(e)
    }
}

/// One snapshot file, replaced atomically.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored agent, if the file exists.
    pub fn load(&self) -> Result<Option<Agent>, StoreError> {
        match fs::read_to_string(&self.path) {
            Ok(text) => Agent::restore(&text).map(Some).map_err(|e| StoreError::Corrupt(e.to_string())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the snapshot durably (temp file, fsync, rename, fsync of the directory).
    pub fn save(&self, snapshot: &str) -> Result<(), StoreError> {
        let tmp = self.path.with_extension("tmp");
        {
            let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
            f.write_all(snapshot.as_bytes())?;
            f.sync_all()?;
        }
        fs::rename(&tmp, &self.path)?;
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        File::open(dir)?.sync_all()?;
        Ok(())
    }
}

/// An agent whose every accepted change is durable before its outputs are released.
pub struct DurableAgent {
    agent: Agent,
    store: FileStore,
    last_saved: String,
    poisoned: bool,
}

impl DurableAgent {
    /// Restores from the store when it holds a snapshot, otherwise starts from `config`.
    pub fn open(store: FileStore, config: AgentConfig) -> Result<Self, StoreError> {
        let agent = match store.load()? {
            Some(agent) => agent,
            None => Agent::new(config),
        };
        let last_saved = agent.snapshot();
        let mut d = DurableAgent { agent, store, last_saved, poisoned: false };
        d.persist()?;
        Ok(d)
    }

    /// The wrapped agent, read-only (mutations must go through the durable calls).
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Sessions, connections: setup calls that are persisted like any other change.
    pub fn with_agent<T>(&mut self, f: impl FnOnce(&mut Agent) -> T) -> Result<(T, Vec<Output>), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned);
        }
        let t = f(&mut self.agent);
        let outputs = self.agent.drain();
        self.persist()?;
        Ok((t, outputs))
    }

    /// One client line; the outputs are returned only once the resulting state is durable.
    pub fn handle_line(&mut self, conn: &str, line: &str) -> Result<Vec<Output>, StoreError> {
        self.with_agent(|a| a.handle_line(conn, line)).map(|(_, o)| o)
    }

    /// One runtime event, durably.
    pub fn runtime_event(&mut self, session: &str, event: RuntimeEvent) -> Result<Vec<Output>, StoreError> {
        let (r, outputs) = self.with_agent(|a| a.runtime_event(session, event))?;
        r.map_err(StoreError::Host)?;
        Ok(outputs)
    }

    fn persist(&mut self) -> Result<(), StoreError> {
        let snapshot = self.agent.snapshot();
        if snapshot == self.last_saved && self.store.path().exists() {
            return Ok(());
        }
        if let Err(e) = self.store.save(&snapshot) {
            self.poisoned = true;
            return Err(e);
        }
        self.last_saved = snapshot;
        Ok(())
    }
}
