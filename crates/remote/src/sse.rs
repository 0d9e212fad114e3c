//! Server-sent events, read with a bound: an event's data may not grow past the largest
//! message accepted. (Hand-written, about forty lines, because the maintained SSE parsers
//! buffer an event without a limit, and a hostile endpoint could grow one forever.)

/// An event larger than the limit.
#[derive(Debug)]
pub(crate) struct TooLarge;

/// Reads the event stream's bytes in any chunking and yields each event's data.
pub(crate) struct Parser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    limit: usize,
    /// The last byte was a CR: a following LF belongs to the same line end.
    after_cr: bool,
}

impl Parser {
    pub fn new(limit: usize) -> Parser {
        Parser { line: Vec::new(), data: Vec::new(), has_data: false, limit, after_cr: false }
    }

    /// Feeds bytes; complete events' data (UTF-8, lossily) go to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut std::collections::VecDeque<String>) -> Result<(), TooLarge> {
        for &b in bytes {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.end_line(out);
                }
                _ => {
                    if self.line.len() + self.data.len() > self.limit + 16 {
                        return Err(TooLarge);
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut std::collections::VecDeque<String>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            // A blank line dispatches the event.
            if std::mem::take(&mut self.has_data) {
                out.push_back(String::from_utf8_lossy(&self.data).into_owned());
            }
            self.data.clear();
            return;
        }
        // `data:` lines only; comments (`:`), `event:`, `id:` and `retry:` are not used here.
        if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]], limit: usize) -> Result<Vec<String>, TooLarge> {
        let mut p = Parser::new(limit);
        let mut out = std::collections::VecDeque::new();
        for c in chunks {
            p.push(c, &mut out)?;
        }
        Ok(out.into())
    }

    #[test]
    fn events_in_any_chunking_with_any_line_end() {
        let all: &[u8] = b": keepalive\n\ndata: {\"a\":1}\n\ndata:x\r\ndata: y\r\rdata: z\r\n\r\nevent: e\nid: 1\n\n";
        let whole = events(&[all], 1024).unwrap();
        assert_eq!(whole, ["{\"a\":1}", "x\ny", "z"]);
        let bytes: Vec<&[u8]> = all.chunks(1).collect();
        assert_eq!(events(&bytes, 1024).unwrap(), whole);
    }

    #[test]
    fn an_event_over_the_limit_is_refused() {
        assert!(events(&[b"data: ", &[b'a'; 100], b"\n"], 50).is_err());
        assert!(events(&[b"data: ", &[b'a'; 40], b"\ndata: ", &[b'a'; 40], b"\n"], 50).is_err());
    }
}
