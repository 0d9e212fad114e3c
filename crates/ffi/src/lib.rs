//! The UniFFI layer: acp-inject for Swift, Kotlin and Python.
//!
//! Thin wrappers over the Rust crates, exported as they are: the wire types (generated remote
//! declarations, `generated_wire.rs`), the core's and the transport's own types (`types.rs`), and
//! objects for the sans-IO agent core (`AgentCore`), the sans-IO client connection
//! (`ClientCore`), the async client (`connect` → `Connection` → `Session`), the agent server
//! around a runtime the author implements (`AgentServer`, `AgentRuntime`, `TurnContext`).
//!
//! Nothing of the conformance harness is here: the engine the bindings' vector drivers use
//! (`VectorRun`) is the test-only component `crates/ffi-conformance`, so the wheel, the jar and
//! the Swift package, built from this crate, do not carry it.
//!
//! The surface is coarse on purpose (a crossing costs microseconds): one call per line or per
//! read, every output it caused returned at once. Objects are `Send + Sync` (a `Mutex`
//! inside); every synchronous call runs inside `catch_unwind` and every async one in a task,
//! so a Rust panic becomes [`AcpError::Internal`] instead of crossing the boundary.

mod agent;
mod client;
mod connection;
mod error;
mod json;
mod line_json;
mod lines;
mod server;
mod types;
// Written by `cargo xtask codegen`, not by rustfmt. The module keeps the name `wire`: UniFFI
// hashes each type's module path into the bindings' checksums.
#[rustfmt::skip]
#[path = "generated_wire.rs"]
mod wire;
// Written by `cargo xtask codegen` (codegen/src/line_json.rs).
#[rustfmt::skip]
mod generated_line_json;

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

pub use agent::AgentCore;
pub use client::ClientCore;
pub use connection::{connect, default_connect_options, ConnectOptions, Connection, Session, SessionPage};
pub use error::AcpError;
pub use server::{AgentRuntime, AgentServer, TurnContext};

uniffi::setup_scaffolding!();

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned())).unwrap_or_else(|| "panic".into())
}

/// Runs `f`, turning a panic into [`AcpError::Internal`]: no Rust panic crosses the FFI. Public
/// for the UniFFI components built beside this one (the test-only conformance engine).
pub fn guard<T>(f: impl FnOnce() -> Result<T, AcpError>) -> Result<T, AcpError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(AcpError::Internal { detail: panic_text(&*p) }))
}

/// A poisoned lock means a panic was caught mid-call; the state is still memory-safe, and the
/// panic itself was already reported as `Internal`. Public like [`guard`].
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The library's tokio runtime: the transports' I/O and tasks run here, whatever event loop
/// the caller uses. Created on first use; [`shutdown_runtime`] stops it.
fn runtime() -> tokio::runtime::Handle {
    let mut rt = runtime_slot::get();
    let rt = rt.get_or_insert_with(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("acp-inject")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the acp-inject runtime: {e}"))
    });
    rt.handle().clone()
}

/// The runtime, taken out for shutdown.
fn take_runtime() -> Option<tokio::runtime::Runtime> {
    runtime_slot::get().take()
}

mod runtime_slot {
    use std::sync::{Mutex, MutexGuard};

    pub(super) static SLOT: Mutex<Option<tokio::runtime::Runtime>> = Mutex::new(None);

    pub(super) fn get() -> MutexGuard<'static, Option<tokio::runtime::Runtime>> {
        super::lock(&SLOT)
    }
}

/// Stops the library's runtime: waits up to `timeout_ms` for its tasks to yield, then drops
/// them. Call it when the program ends (the Python package does, at exit) so no library thread
/// is still calling into the host language while it shuts down. A later async call starts a
/// new runtime.
#[uniffi::export]
pub fn shutdown_runtime(timeout_ms: u64) {
    if let Some(rt) = take_runtime() {
        rt.shutdown_timeout(std::time::Duration::from_millis(timeout_ms));
    }
}

/// Runs `f` as a task on the library's runtime and waits for it from any executor; a panic in
/// it becomes [`AcpError::Internal`].
async fn on_runtime<T: Send + 'static>(f: impl Future<Output = Result<T, AcpError>> + Send + 'static) -> Result<T, AcpError> {
    match runtime().spawn(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => Err(AcpError::Internal { detail: panic_text(&*e.into_panic()) }),
        Err(e) => Err(AcpError::Internal { detail: e.to_string() }),
    }
}

/// The library's version, for checking that bindings and library match.
#[uniffi::export]
pub fn library_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// The default agent configuration: queue and steer, replace, `finish`, batch drain.
#[uniffi::export]
pub fn default_agent_config() -> acp_inject_core::agent::AgentConfig {
    use acp_inject_core::wire::{InjectCapabilities, InjectMode, PendingCapabilities, SteerInStream};
    acp_inject_core::agent::AgentConfig {
        inject: Some(
            InjectCapabilities::new([InjectMode::Queue, InjectMode::Steer])
                .pending(PendingCapabilities::new().replace(true))
                .steer_in_stream(vec![SteerInStream::Finish]),
        ),
        ..Default::default()
    }
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<AgentCore>();
    is::<ClientCore>();
    is::<Connection>();
    is::<Session>();
    is::<AgentServer>();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guard is the backstop: a panic becomes a typed error and leaves the object usable.
    #[test]
    fn a_panic_becomes_a_typed_internal_error() {
        let r: Result<(), AcpError> = guard(|| panic!("boom"));
        assert_eq!(r, Err(AcpError::Internal { detail: "boom".into() }));
        let core = AgentCore::new(default_agent_config()).unwrap();
        assert!(core.create_session("s1".into(), "/w".into()).unwrap());
        assert!(core.is_live("s1".into()).unwrap());
    }

    #[test]
    fn an_async_panic_becomes_a_typed_internal_error() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let r: Result<(), AcpError> = rt.block_on(on_runtime(async { panic!("async boom") }));
        assert_eq!(r, Err(AcpError::Internal { detail: "async boom".into() }));
    }
}
