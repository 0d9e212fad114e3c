//! The per-line receive path for Kotlin and Python hosts, beside UniFFI's calling convention.
//!
//! A UniFFI call from Kotlin crosses JNA with `Structure` values (the argument buffer, which
//! needs its own allocating call, the result buffer, which needs its own freeing call, and the
//! call status), and one from Python is three ctypes calls: most of the cost of one call per
//! line. [`acp_inject_line_port_receive_into`] takes a line port (a handle this module hands
//! out, [`ClientCore::line_port`], so no foreign layer reads UniFFI's private handles), the line
//! and a reusable output buffer as plain arguments and writes the events in the boundary
//! encoding (a list of `Event`, `crate::codec`), which each language decodes with its generated
//! decoder: the very events `ClientCore::receive` returns, in one crossing with primitive
//! arguments. Kotlin's `ClientCore.receiveLine` and Python's `ClientCore.receive_line` are its
//! callers; [`acp_inject_line_port_free`] releases a port.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use acp_inject_core::client::Event;

use crate::client::ClientCore;
use crate::codec::{Encode, Writer};

/// The line is not UTF-8.
pub const NOT_UTF8: i64 = i64::MIN + 1;
/// A panic inside the library (a bug), caught at the boundary.
pub const PANICKED: i64 = i64::MIN;

thread_local! {
    /// Events that did not fit the caller's buffer, for [`acp_inject_take_spilled`] on the
    /// same thread.
    static SPILLED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The buffer the events are serialized into, reused from line to line.
    static WRITTEN: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Applies one line to `core` and writes its events into `out` (see
/// [`acp_inject_line_port_receive_into`] for the results).
fn receive_into(core: &ClientCore, line: &[u8], out: &mut [u8]) -> i64 {
    // The caller may hand the line over as read, with its ending.
    let line = line.strip_suffix(b"\n").map_or(line, |l| l.strip_suffix(b"\r").unwrap_or(l));
    let Ok(line) = std::str::from_utf8(line) else { return NOT_UTF8 };
    match catch_unwind(AssertUnwindSafe(|| core.receive_events(line))) {
        Ok(events) => write_events(&events, out),
        Err(_) => PANICKED,
    }
}

/// Writes `events` into `out`, encoded: the number of bytes, or `-n` when they did not fit
/// (they wait for [`acp_inject_take_spilled`]).
fn write_events(events: &[Event], out: &mut [u8]) -> i64 {
    WRITTEN.with(|w| {
        let mut bytes = w.take();
        bytes.clear();
        let mut writer = Writer::new(bytes);
        events.encode(&mut writer);
        let bytes = writer.into_bytes();
        let n = bytes.len();
        if n <= out.len() {
            out[..n].copy_from_slice(&bytes);
            // Kept for the next line unless a rare large one grew it.
            if bytes.capacity() <= KEPT_CAPACITY {
                w.set(bytes);
            }
            n as i64
        } else {
            SPILLED.with(|s| *s.borrow_mut() = bytes);
            -(n as i64)
        }
    })
}

/// The connection of a live line port, the input bytes and the output buffer of a per-line call.
///
/// # Safety
///
/// `port` came from `ClientCore.line_port()` and has not been freed (it is the address of an
/// `Arc<ClientCore>` from [`open_port`]); `data` points to `len` readable bytes and `out` to
/// `out_cap` writable bytes, not overlapping, all valid for the call.
#[allow(unsafe_code)]
unsafe fn parts<'a>(port: u64, data: *const u8, len: u64, out: *mut u8, out_cap: u64) -> (&'a ClientCore, &'a [u8], &'a mut [u8]) {
    // SAFETY: the contract above.
    unsafe {
        (
            &*(port as *const ClientCore),
            std::slice::from_raw_parts(data, len as usize),
            std::slice::from_raw_parts_mut(out, out_cap as usize),
        )
    }
}

/// A line port: the address of an `Arc<ClientCore>` this module owns, handed out by
/// [`ClientCore::line_port`] so that the foreign layers call the per-line functions with a
/// handle of ours, never one of UniFFI's.
pub(crate) fn open_port(core: Arc<ClientCore>) -> u64 {
    Arc::into_raw(core) as u64
}

/// Applies one agent line (`line_len` bytes of UTF-8 at `line`; a trailing `\n` or `\r\n` is
/// dropped) to the client connection of line port `port` and writes the events it caused into
/// `out` (`out_cap` bytes), encoded (a list of `Event`). Returns the number
/// of bytes written; when they do not fit, `-n` (they wait for [`acp_inject_take_spilled`] with
/// `n` bytes of room, on this thread); [`NOT_UTF8`] or [`PANICKED`] on failure, with nothing
/// applied.
///
/// # Safety
///
/// `port` came from `ClientCore.line_port()` and has not been freed; `line` points to
/// `line_len` readable bytes and `out` to `out_cap` writable bytes, not overlapping.
#[no_mangle]
#[allow(unsafe_code)]
pub unsafe extern "C" fn acp_inject_line_port_receive_into(
    port: u64,
    line: *const u8,
    line_len: u64,
    out: *mut u8,
    out_cap: u64,
) -> i64 {
    // SAFETY: the caller's contract above.
    let (core, line, out) = unsafe { parts(port, line, line_len, out, out_cap) };
    receive_into(core, line, out)
}

/// Applies bytes the agent wrote (`len` bytes at `bytes`, in any chunking: a line's end may
/// come in a later call, like `ClientCore.feed`) to the client connection of line port `port`,
/// and writes the events they caused into `out`, like [`acp_inject_line_port_receive_into`].
/// Returns the same results (never [`NOT_UTF8`]: a
/// line that is not UTF-8 is the connection's to report, as an ignored line).
///
/// # Safety
///
/// As for [`acp_inject_line_port_receive_into`], with `bytes` pointing to `len` readable bytes.
#[no_mangle]
#[allow(unsafe_code)]
pub unsafe extern "C" fn acp_inject_line_port_feed_into(port: u64, bytes: *const u8, len: u64, out: *mut u8, out_cap: u64) -> i64 {
    // SAFETY: the caller's contract above.
    let (core, bytes, out) = unsafe { parts(port, bytes, len, out, out_cap) };
    match catch_unwind(AssertUnwindSafe(|| core.feed_events(bytes))) {
        Ok(events) => write_events(&events, out),
        Err(_) => PANICKED,
    }
}

/// Releases a line port (the connection lives on while UniFFI's object or another port holds it).
///
/// # Safety
///
/// `port` came from `ClientCore.line_port()` and is freed once, with no call using it running
/// or following.
#[no_mangle]
#[allow(unsafe_code)]
pub unsafe extern "C" fn acp_inject_line_port_free(port: u64) {
    if port != 0 {
        // SAFETY: the caller's contract above; `open_port` made it with `Arc::into_raw`.
        drop(unsafe { Arc::from_raw(port as *const ClientCore) });
    }
}

/// The largest serialization buffer a thread keeps between lines.
const KEPT_CAPACITY: usize = 64 << 10;

/// Copies the events the last [`acp_inject_line_port_receive_into`] of this thread could
/// not fit into `out` (`out_cap` bytes, at least what it asked for); returns the number of
/// bytes written, or `-n` when `out` is still too small (they stay).
///
/// # Safety
///
/// `out` points to `out_cap` writable bytes.
#[no_mangle]
#[allow(unsafe_code)]
pub unsafe extern "C" fn acp_inject_take_spilled(out: *mut u8, out_cap: u64) -> i64 {
    // SAFETY: the caller's contract above.
    let out = unsafe { std::slice::from_raw_parts_mut(out, out_cap as usize) };
    SPILLED.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() > out.len() {
            return -(s.len() as i64);
        }
        out[..s.len()].copy_from_slice(&s);
        let n = s.len() as i64;
        s.clear();
        n
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn read_count(bytes: &[u8]) -> usize {
        crate::codec::decode::<Vec<Event>>(bytes).expect("events").len()
    }

    #[test]
    #[allow(unsafe_code)]
    fn a_line_crosses_as_serialized_events_and_a_large_answer_spills() {
        let core = ClientCore::new(1 << 20);
        core.open_session("s1".into(), None).unwrap();
        let handle = Arc::clone(&core).line_port();
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"hello"}}}}"#;
        let mut out = vec![0u8; 4096];
        let n = unsafe { acp_inject_line_port_receive_into(handle, line.as_ptr(), line.len() as u64, out.as_mut_ptr(), 4096) };
        assert!(n > 4, "{n}");
        assert_eq!(read_count(&out[..n as usize]), 1);
        let expected = core.receive(line.to_owned()).unwrap();
        assert_eq!(&out[..n as usize], &expected[..], "the same encoding as the UniFFI call's");

        let mut small = vec![0u8; 8];
        let n = unsafe { acp_inject_line_port_receive_into(handle, line.as_ptr(), line.len() as u64, small.as_mut_ptr(), 8) };
        assert!(n < 0);
        let mut big = vec![0u8; (-n) as usize];
        assert_eq!(unsafe { acp_inject_take_spilled(big.as_mut_ptr(), 4) }, n, "still too small: kept");
        assert_eq!(unsafe { acp_inject_take_spilled(big.as_mut_ptr(), big.len() as u64) }, -n);
        assert_eq!(read_count(&big), 1);

        for ended in [format!("{line}\n"), format!("{line}\r\n")] {
            let mut with_ending = vec![0u8; 4096];
            let m = unsafe {
                acp_inject_line_port_receive_into(handle, ended.as_ptr(), ended.len() as u64, with_ending.as_mut_ptr(), 4096)
            };
            assert_eq!(m, n.abs(), "the line ending is dropped: {ended:?}");
        }

        // A second port on the same connection: the same bytes; each port holds the connection.
        let port = Arc::clone(&core).line_port();
        let mut via_port = vec![0u8; 4096];
        let m = unsafe { acp_inject_line_port_receive_into(port, line.as_ptr(), line.len() as u64, via_port.as_mut_ptr(), 4096) };
        assert_eq!(&via_port[..m as usize], &out[..n.unsigned_abs() as usize]);
        assert_eq!(Arc::strong_count(&core), 3, "the test's and two ports");
        unsafe { acp_inject_line_port_free(port) };
        assert_eq!(Arc::strong_count(&core), 2);

        let bad = [0xffu8, 0xfe];
        assert_eq!(unsafe { acp_inject_line_port_receive_into(handle, bad.as_ptr(), 2, out.as_mut_ptr(), 4096) }, NOT_UTF8);
        unsafe { acp_inject_line_port_free(handle) };
        assert_eq!(Arc::strong_count(&core), 1, "every port released");
    }
}
