//! Server-sent events, read with a bound: an event's data may not grow past the largest
//! message accepted. (Hand-written, about forty lines, because the maintained SSE parsers
//! buffer an event without a limit, and a hostile endpoint could grow one forever.)

/// An event larger than the limit.
#[derive(Debug)]
pub(crate) struct TooLarge;

/// Reads the event stream's bytes in any chunking and yields each event's data, with the last
/// event id seen when it was dispatched (the `id:` field, which persists across events).
pub(crate) struct Parser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    last_id: Option<String>,
    limit: usize,
    /// The last byte was a CR: a following LF belongs to the same line end.
    after_cr: bool,
}

impl Parser {
    pub fn new(limit: usize) -> Parser {
        Parser { line: Vec::new(), data: Vec::new(), has_data: false, last_id: None, limit, after_cr: false }
    }

    /// Feeds bytes; complete events (the last event id, and the data as UTF-8, lossily) go to
    /// `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut std::collections::VecDeque<(Option<String>, String)>) -> Result<(), TooLarge> {
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

    fn end_line(&mut self, out: &mut std::collections::VecDeque<(Option<String>, String)>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            // A blank line dispatches the event.
            if std::mem::take(&mut self.has_data) {
                out.push_back((self.last_id.clone(), String::from_utf8_lossy(&self.data).into_owned()));
            }
            self.data.clear();
            return;
        }
        // `data:` and `id:` lines; comments (`:`), `event:` and `retry:` are not used here.
        if let Some(value) = line.strip_prefix(b"id:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            // An id with a NUL is ignored (the SSE specification).
            if !value.contains(&0) {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            return;
        }
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
        Ok(with_ids(chunks, limit)?.into_iter().map(|(_, data)| data).collect())
    }

    fn with_ids(chunks: &[&[u8]], limit: usize) -> Result<Vec<(Option<String>, String)>, TooLarge> {
        let mut p = Parser::new(limit);
        let mut out = std::collections::VecDeque::new();
        for c in chunks {
            p.push(c, &mut out)?;
        }
        Ok(out.into())
    }

    #[test]
    fn the_last_event_id_goes_with_each_event() {
        let all: &[u8] = b"data: a

id: 7
data: b

data: c

id: 9
data: d

";
        let seen = with_ids(&[all], 1024).unwrap();
        let expected = [(None, "a"), (Some("7"), "b"), (Some("7"), "c"), (Some("9"), "d")];
        assert_eq!(seen, expected.map(|(id, d)| (id.map(str::to_owned), d.to_owned())));
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
