//! The line framer: any chunking of a byte stream yields the same lines as the stream fed at
//! once, no line exceeds the limit, and an oversized line never leaks into the next one.
#![no_main]

use acp_inject_core::wire::framing::{Framed, LineFramer};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
enum Out {
    Line(Vec<u8>),
    Oversized,
}

fn frame(chunks: &[&[u8]], limit: usize) -> Vec<Out> {
    let mut f = LineFramer::new(limit);
    let mut out = Vec::new();
    let mut each = |x: Framed<'_>| {
        out.push(match x {
            Framed::Line(l) => {
                assert!(l.len() <= limit, "a line over the limit");
                assert!(!l.contains(&b'\n') && !l.is_empty());
                Out::Line(l.to_vec())
            }
            Framed::Oversized { len } => {
                assert!(len > limit);
                Out::Oversized
            }
        })
    };
    for c in chunks {
        f.push(c, &mut each);
    }
    f.finish(&mut each);
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else { return };
    let limit = 1 + usize::from(head % 64);
    let whole = frame(&[rest], limit);
    // Cut points from the data itself.
    let mut chunks = Vec::new();
    let mut at = 0;
    for (i, b) in rest.iter().enumerate() {
        if b % 7 == 0 {
            chunks.push(&rest[at..i]);
            at = i;
        }
    }
    chunks.push(&rest[at..]);
    assert_eq!(frame(&chunks, limit), whole, "chunking changed the lines");
    let single: Vec<&[u8]> = rest.chunks(1).collect();
    assert_eq!(frame(&single, limit), whole, "byte-at-a-time changed the lines");
});
