//! The UniFFI layer: acp-inject for Swift, Kotlin and Python.
//!
//! UniFFI carries the objects (the sans-IO agent core `AgentCore`, the sans-IO client
//! connection `ClientCore`, the async client `connect` → `Connection` → `Session`, the agent
//! server `AgentServer` around a runtime the author implements, `AgentRuntime` and
//! `TurnContext`), async calls and callbacks. Values cross as bytes in the boundary encoding
//! (`docs/encoding.md`, [`codec`]): every value argument and result of these objects is a
//! `Vec<u8>`, which each language encodes and decodes with code generated from the same value
//! model as this crate's (`generated_values.rs`); errors cross as [`FfiError`], the message and
//! the encoded [`AcpError`].
//!
//! Nothing of the conformance harness is here: the engine the bindings' vector drivers use
//! (`VectorRun`) is the test-only component `crates/ffi-conformance`, so the wheel, the jar and
//! the Swift package, built from this crate, do not carry it.
//!
//! The surface is coarse on purpose (a crossing costs microseconds): one call per line or per
//! read, every output it caused returned at once; the per-line path of Python and Kotlin is a
//! plain C function (`lines.rs`). Objects are `Send + Sync` (a `Mutex` inside); every
//! synchronous call runs inside `catch_unwind` and every async one in a task, so a Rust panic
//! becomes [`AcpError::Internal`] instead of crossing the boundary.

mod agent;
mod client;
pub mod codec;
mod connection;
mod error;
mod lines;
mod server;
// Written by `cargo xtask codegen` (codegen/src/values/rust.rs): the boundary encoding of every
// value, on the runtime of `codec`.
#[rustfmt::skip]
mod generated_values;

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

pub use agent::{AgentCore, PermissionRequestSent};
pub use client::ClientCore;
pub use codec::{Decode, Encode};
pub use connection::{connect, connect_url, ConnectOptions, Connection, Session, SessionPage};
pub use error::{AcpError, FfiError};
pub use server::{AgentRuntime, AgentServer, ListenLimits, TurnContext};

uniffi::setup_scaffolding!();

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned())).unwrap_or_else(|| "panic".into())
}

/// Runs `f`, turning a panic into [`AcpError::Internal`] (no Rust panic crosses the FFI) and the
/// error into the [`FfiError`] that crosses. Public for the UniFFI components built beside this
/// one (the test-only conformance engine).
pub fn guard<T>(f: impl FnOnce() -> Result<T, AcpError>) -> Result<T, FfiError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(AcpError::Internal { detail: panic_text(&*p) })).map_err(FfiError::from)
}

/// The value `bytes` encode (an argument from a foreign caller): what did not decode is the
/// caller's [`AcpError::InvalidInput`], naming `what`.
pub fn arg<T: Decode>(bytes: &[u8], what: &str) -> Result<T, AcpError> {
    codec::decode(bytes).map_err(|e| AcpError::InvalidInput { detail: format!("{what}: {e}") })
}

/// `value`, encoded for a foreign caller.
pub fn out<T: Encode + ?Sized>(value: &T) -> Vec<u8> {
    codec::encode(value)
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
/// it becomes [`AcpError::Internal`], and the error the [`FfiError`] that crosses.
async fn on_runtime<T: Send + 'static>(f: impl Future<Output = Result<T, AcpError>> + Send + 'static) -> Result<T, FfiError> {
    let r = match runtime().spawn(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => Err(AcpError::Internal { detail: panic_text(&*e.into_panic()) }),
        Err(e) => Err(AcpError::Internal { detail: e.to_string() }),
    };
    r.map_err(FfiError::from)
}

/// The library's version, for checking that bindings and library match.
#[uniffi::export]
pub fn library_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// The default agent configuration: queue and steer, replace, `finish`, batch drain.
pub fn default_config() -> acp_inject_core::agent::AgentConfig {
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

/// The default agent configuration ([`default_config`]), encoded (an `AgentConfig`).
#[uniffi::export]
pub fn default_agent_config() -> Vec<u8> {
    out(&default_config())
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
        let r: Result<(), FfiError> = guard(|| panic!("boom"));
        assert_eq!(r.map_err(AcpError::from), Err(AcpError::Internal { detail: "boom".into() }));
        let core = AgentCore::new(default_agent_config()).unwrap();
        assert!(core.create_session("s1".into(), "/w".into()).unwrap());
        assert!(core.is_live("s1".into()).unwrap());
    }

    #[test]
    fn an_async_panic_becomes_a_typed_internal_error() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let r: Result<(), FfiError> = rt.block_on(on_runtime(async { panic!("async boom") }));
        assert_eq!(r.map_err(AcpError::from), Err(AcpError::Internal { detail: "async boom".into() }));
    }

    /// An error crosses encoded, and comes back the same; bytes that are no error keep the message.
    #[test]
    fn errors_cross_encoded() {
        use acp_inject_core::client::CallRejected;
        let e = AcpError::from(CallRejected::InvalidArguments("empty".into()));
        let FfiError::Failed { message, error } = FfiError::from(e.clone());
        assert_eq!(message, "refused locally: invalid_arguments: empty");
        let back: AcpError = codec::decode(&error).unwrap();
        // The reason's text stays in `detail`; the reason is its kind.
        assert_eq!(
            back,
            AcpError::Rejected { reason: CallRejected::InvalidArguments(String::new()), detail: "invalid_arguments: empty".into() }
        );
        let garbled = FfiError::Failed { message: "m".into(), error: vec![0xc1] };
        assert_eq!(AcpError::from(garbled), AcpError::Internal { detail: "m".into() });
    }
}
