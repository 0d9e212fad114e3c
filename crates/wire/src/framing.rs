//! Newline-delimited framing over a byte stream: the one line splitter every transport, the
//! agent server, the client connection and the bindings share.
//!
//! [`LineFramer`] accepts the stream in arbitrary chunks (a read may end mid-line or hold many
//! lines) and yields each complete line once, without its `\n` or `\r\n`. Blank lines are
//! skipped (JSON-RPC over stdio never sends them). A line longer than the limit is reported as
//! [`Framed::Oversized`] as soon as the limit is passed, and its bytes are discarded up to the
//! next newline, so memory stays bounded whatever the peer sends. Bytes are passed on as they
//! are: UTF-8 is the decoder's business (it answers invalid UTF-8 with a parse error).

/// What the framer found in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framed<'a> {
    /// A complete line, without its line terminator.
    Line(&'a [u8]),
    /// A line longer than the limit; `len` is the number of bytes seen when it was refused.
    Oversized {
        /// Bytes of the line seen so far (more than the limit).
        len: usize,
    },
}

/// Splits a byte stream into lines. See the module docs.
#[derive(Debug, Clone)]
pub struct LineFramer {
    partial: Vec<u8>,
    max_line_bytes: usize,
    /// Inside an oversized line: drop bytes until the next newline.
    discarding: bool,
}

impl LineFramer {
    /// A framer that refuses lines longer than `max_line_bytes` (terminator excluded).
    pub fn new(max_line_bytes: usize) -> Self {
        LineFramer { partial: Vec::new(), max_line_bytes, discarding: false }
    }

    /// The limit this framer enforces.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Bytes of an unfinished line held since the last newline.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Feeds one chunk; `each` is called for every complete line (and oversized line) in it,
    /// in order.
    pub fn push(&mut self, mut chunk: &[u8], mut each: impl FnMut(Framed<'_>)) {
        while !chunk.is_empty() {
            match chunk.iter().position(|b| *b == b'\n') {
                Some(end) => {
                    let (head, rest) = (&chunk[..end], &chunk[end + 1..]);
                    chunk = rest;
                    if self.discarding {
                        self.discarding = false;
                        continue;
                    }
                    if self.partial.is_empty() {
                        self.emit(head, &mut each);
                    } else {
                        if self.over_limit(head.len(), &mut each) {
                            self.discarding = false;
                            continue;
                        }
                        let mut line = std::mem::take(&mut self.partial);
                        line.extend_from_slice(head);
                        self.emit(&line, &mut each);
                        line.clear();
                        self.partial = line;
                    }
                }
                None => {
                    if !self.discarding && !self.over_limit(chunk.len(), &mut each) {
                        self.partial.extend_from_slice(chunk);
                    }
                    return;
                }
            }
        }
    }

    /// The end of the stream: a final line without a newline is still a line.
    pub fn finish(&mut self, mut each: impl FnMut(Framed<'_>)) {
        let line = std::mem::take(&mut self.partial);
        if !self.discarding {
            self.emit(&line, &mut each);
        }
        self.discarding = false;
    }

    /// Whether adding `more` bytes to the partial line passes the limit; if so it is reported
    /// once and the line is discarded up to its newline.
    fn over_limit(&mut self, more: usize, each: &mut impl FnMut(Framed<'_>)) -> bool {
        let len = self.partial.len() + more;
        if len <= self.max_line_bytes.saturating_add(1) {
            return false;
        }
        // One byte of slack: a `\r` before the newline is not part of the line.
        self.partial.clear();
        self.discarding = true;
        each(Framed::Oversized { len });
        true
    }

    fn emit(&self, line: &[u8], each: &mut impl FnMut(Framed<'_>)) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // Length first: a line over the limit is oversized whatever it holds, as it is when
        // the limit is crossed while the line is still arriving (any chunking, one answer).
        if line.len() > self.max_line_bytes {
            each(Framed::Oversized { len: line.len() });
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            each(Framed::Line(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(chunks: &[&[u8]], max: usize) -> Vec<String> {
        let mut f = LineFramer::new(max);
        let mut out = Vec::new();
        let mut push = |x: Framed<'_>| {
            out.push(match x {
                Framed::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Framed::Oversized { .. } => "<oversized>".to_owned(),
            })
        };
        for c in chunks {
            f.push(c, &mut push);
        }
        f.finish(&mut push);
        out
    }

    #[test]
    fn an_oversized_blank_line_is_oversized_in_any_chunking() {
        // Found by the framer fuzz target: byte at a time, the limit is crossed before the
        // line is known to be blank.
        let stream: &[u8] = b"\x00\r\n \r\r\np*\x00\n";
        let whole = frame(&[stream], 1);
        let single: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(whole, ["\u{0}", "<oversized>", "<oversized>"]);
        assert_eq!(frame(&single, 1), whole);
    }

    #[test]
    fn splits_joins_and_strips_terminators() {
        assert_eq!(frame(&[b"a\nb\r\n", b"c"], 100), ["a", "b", "c"]);
        assert_eq!(frame(&[b"ab", b"c\nd", b"e\n"], 100), ["abc", "de"]);
        assert_eq!(frame(&[b"\n\r\n  \n", b"x\n"], 100), ["x"]);
        assert_eq!(frame(&[b"a\r", b"\nb\n"], 100), ["a", "b"]);
    }

    #[test]
    fn oversized_lines_are_reported_once_and_skipped() {
        assert_eq!(frame(&[b"12345\nok\n"], 4), ["<oversized>", "ok"]);
        assert_eq!(frame(&[b"12", b"34", b"56", b"78\nok\n"], 4), ["<oversized>", "ok"]);
        assert_eq!(frame(&[b"1234\r\n"], 4), ["1234"]);
        assert_eq!(frame(&[b"123456789"], 4), ["<oversized>"]);
    }

    #[test]
    fn any_chunking_gives_the_same_lines() {
        let stream: &[u8] = b"{\"a\":1}\r\n\n{\"b\":2}\nxx\n12345678901\n{\"c\":3}";
        let whole = frame(&[stream], 10);
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let parts = [&stream[..cut], &stream[cut..cut2], &stream[cut2..]];
                assert_eq!(frame(&parts, 10), whole, "cuts at {cut}, {cut2}");
            }
        }
        assert_eq!(whole, ["{\"a\":1}", "{\"b\":2}", "xx", "<oversized>", "{\"c\":3}"]);
    }
}
