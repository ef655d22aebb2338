//! Splits a byte stream into lines at the byte level, so a UTF-8 character split across network
//! chunks is reassembled before it is decoded.
//!
//! A stream that goes silent is given up on (`StreamTimeouts`: 600 s until the answer starts, 120 s
//! between pieces).

#[derive(Default)]
pub struct NdjsonSplitter {
    buf: Vec<u8>,
}

impl NdjsonSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; returns every complete, non-blank line (without the newline).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(chunk);
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let line = trim(&self.buf[start..start + pos]);
            if !line.is_empty() {
                lines.push(line.to_vec());
            }
            start += pos + 1;
        }
        self.buf.drain(..start);
        lines
    }

    /// The last line, if the stream ended without a newline.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let rest = std::mem::take(&mut self.buf);
        let line = trim(&rest);
        (!line.is_empty()).then(|| line.to_vec())
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let mut s = b;
    while let [rest @ .., b'\r' | b' ' | b'\t'] = s {
        s = rest;
    }
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembles_a_utf8_character_split_across_chunks() {
        let line = "{\"c\":\"caf\u{e9} \u{1F600}\"}\n".as_bytes();
        // split inside the 2-byte é and inside the 4-byte emoji
        let e = line.iter().position(|&b| b == 0xC3).unwrap() + 1;
        let f = line.iter().position(|&b| b == 0xF0).unwrap() + 2;
        let mut s = NdjsonSplitter::new();
        assert!(s.push(&line[..e]).is_empty());
        assert!(s.push(&line[e..f]).is_empty());
        let out = s.push(&line[f..]);
        assert_eq!(out.len(), 1);
        assert_eq!(
            String::from_utf8(out[0].clone()).unwrap(),
            "{\"c\":\"caf\u{e9} \u{1F600}\"}"
        );
    }

    #[test]
    fn several_lines_in_one_chunk_blank_lines_and_a_tail() {
        let mut s = NdjsonSplitter::new();
        let out = s.push(b"a\r\n\nb\nc");
        assert_eq!(out, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(s.finish(), Some(b"c".to_vec()));
        assert_eq!(s.finish(), None);
    }
}

/// Properties of the splitter: it never panics, where a stream is cut does not matter, and what
/// it gives is exactly the stream's non-blank lines, trimmed.
#[cfg(test)]
pub(super) mod props {
    use super::*;
    use proptest::prelude::*;

    /// Bytes as streams have them: mostly text with line ends, blanks, `\r`, multi-byte UTF-8,
    /// and any byte at all now and then.
    pub(crate) fn stream_bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            4 => "[a-z{}\":,]{1,8}".prop_map(String::into_bytes),
            2 => Just(b"\n".to_vec()),
            1 => Just(b"\r\n".to_vec()),
            1 => Just(b" \t".to_vec()),
            1 => "[é€😀中]{1,3}".prop_map(String::into_bytes),
            1 => any::<u8>().prop_map(|b| vec![b]),
        ];
        prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
    }

    /// `bytes` cut at the given places (each taken modulo the length).
    pub(crate) fn cut(bytes: &[u8], at: &[usize]) -> Vec<Vec<u8>> {
        let mut at: Vec<usize> = at
            .iter()
            .map(|a| if bytes.is_empty() { 0 } else { a % bytes.len() })
            .chain([0, bytes.len()])
            .collect();
        at.sort_unstable();
        at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
    }

    fn lines_of(chunks: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut s = NdjsonSplitter::new();
        let mut out: Vec<Vec<u8>> = chunks.iter().flat_map(|c| s.push(c)).collect();
        out.extend(s.finish());
        out
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_lines(
            bytes in stream_bytes(),
            at in prop::collection::vec(any::<usize>(), 0..20),
        ) {
            let whole = lines_of(std::slice::from_ref(&bytes));
            prop_assert_eq!(lines_of(&cut(&bytes, &at)), whole.clone());
            // one byte at a time, too
            let bytewise: Vec<Vec<u8>> = bytes.iter().map(|b| vec![*b]).collect();
            prop_assert_eq!(lines_of(&bytewise), whole);
        }

        #[test]
        fn the_lines_are_the_streams_non_blank_lines_trimmed(bytes in stream_bytes()) {
            let expected: Vec<Vec<u8>> = bytes
                .split(|&b| b == b'\n')
                .map(trim)
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            prop_assert_eq!(lines_of(&[bytes]), expected);
        }

        #[test]
        fn lines_joined_come_back_as_they_were(
            lines in prop::collection::vec("[^\n\r\t ]([^\n]{0,30}[^\n\r\t ])?", 0..12),
            crlf in any::<bool>(),
            at in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let end = if crlf { "\r\n" } else { "\n" };
            let text: String = lines.iter().map(|l| format!("{l}{end}")).collect();
            let back: Vec<String> = lines_of(&cut(text.as_bytes(), &at))
                .into_iter()
                .map(|l| String::from_utf8(l).unwrap())
                .collect();
            prop_assert_eq!(back, lines);
        }
    }
}

/// How reading a line stream ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// `on_line` said it had seen the last line.
    Done,
    /// The server closed the stream.
    Closed,
    /// The caller cancelled.
    Cancelled,
}

/// Feeds each line of a streamed HTTP body to `on_line` (which returns true at the last one),
/// until then, the body's end, or `cancel`. A broken connection is [`LlmError::BrokenOff`]
/// (`what` names the stream: "the reply", "the download"); silence longer than `timeouts` allow
/// (`first_byte` until the first piece arrives, `idle` after) is [`LlmError::Stalled`].
///
/// [`LlmError::BrokenOff`]: super::LlmError::BrokenOff
/// [`LlmError::Stalled`]: super::LlmError::Stalled
pub async fn each_line(
    resp: reqwest::Response,
    what: &str,
    timeouts: super::StreamTimeouts,
    cancel: &tokio_util::sync::CancellationToken,
    mut on_line: impl FnMut(&[u8]) -> Result<bool, super::LlmError>,
) -> Result<Ended, super::LlmError> {
    use futures::StreamExt;
    let mut stream = resp.bytes_stream();
    let mut splitter = NdjsonSplitter::new();
    let mut limit = timeouts.first_byte;
    loop {
        let chunk = tokio::select! {
            c = tokio::time::timeout(limit, stream.next()) => match c {
                Ok(c) => c,
                Err(_) => return Err(super::LlmError::Stalled { after: limit }),
            },
            _ = cancel.cancelled() => return Ok(Ended::Cancelled),
        };
        limit = timeouts.idle;
        match chunk {
            Some(Ok(bytes)) => {
                for line in splitter.push(&bytes) {
                    if on_line(&line)? {
                        return Ok(Ended::Done);
                    }
                }
            }
            Some(Err(e)) => {
                return Err(super::LlmError::BrokenOff {
                    what: what.to_string(),
                    detail: super::http::root_cause(&e),
                })
            }
            None => break,
        }
    }
    if let Some(line) = splitter.finish() {
        if on_line(&line)? {
            return Ok(Ended::Done);
        }
    }
    Ok(Ended::Closed)
}
