//! The network transport's own framing: SSE events read in any chunking give the same events
//! as the stream read at once, none longer than the limit; the routing reader and the
//! WebSocket line conversion take any bytes without panicking, and a converted line has no
//! line break in it.
#![no_main]

use acp_inject_remote::fuzzing;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else { return };
    let limit = 1 + usize::from(head % 128);
    // SSE: whole, then cut at every byte equal to the head.
    let whole = fuzzing::sse_events(&[rest], limit);
    let chunks: Vec<&[u8]> = rest.split_inclusive(|b| *b == head).collect();
    assert_eq!(fuzzing::sse_events(&chunks, limit).is_some(), whole.is_some(), "chunking changed whether the limit was passed");
    if let Some(events) = &whole {
        assert_eq!(fuzzing::sse_events(&chunks, limit).as_ref(), Some(events), "chunking changed the events");
        // Lossy UTF-8 may grow a byte to three.
        assert!(events.iter().all(|e| e.len() <= 3 * (limit + 16)), "an event over the limit");
    }
    // Routing and WebSocket lines.
    let (envelope, batch) = fuzzing::envelope(rest);
    assert!(!(batch && envelope.is_some()), "a batch read as one message");
    if let Ok(text) = std::str::from_utf8(rest) {
        if let Some(line) = fuzzing::as_line(text) {
            assert!(!line.contains(['\n', '\r']), "a line break in a line");
        }
    }
});
