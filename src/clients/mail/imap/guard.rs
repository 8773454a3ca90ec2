//! A bounded reader between the socket and async-imap.
//!
//! async-imap sizes its read buffer to whatever literal a server announces (`{500000000}`
//! allocates 500 MB at once, up to its own 512 MiB limit) and re-parses a response after
//! every 4 KiB read while it is incomplete. A mail server is untrusted input, so this
//! layer reads the server's bytes first and hands async-imap only whole units: a complete
//! line, or a line announcing a literal together with all of that literal's bytes. Then
//! - a literal beyond `max_literal` (or a response beyond `max_response`) is refused as
//!   soon as it is announced, before anything is allocated for it;
//! - what is buffered grows with the bytes that actually arrived, never with what a
//!   server announces;
//! - a line (outside literals) longer than `max_line` is refused, which bounds the
//!   re-parsing async-imap does on a long line to a few dozen attempts.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::sessions::Permit;
use super::stream::MailStream;

/// The longest line (outside literals) a server may send. IMAP responses the sync reads
/// are short (one FETCH per line; UIDs are read with `UID FETCH 1:* (UID)` so no SEARCH
/// line grows with the mailbox).
pub const MAX_LINE: usize = 256 * 1024;

/// Limits of one connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_literal: usize,
    pub max_response: usize,
    pub max_line: usize,
}

impl Limits {
    /// Literals up to `max_literal`; a response may hold a little more than one literal
    /// (the FETCH items around it, a partial fetch's header and text).
    pub fn for_literal(max_literal: usize) -> Self {
        Self {
            max_literal,
            max_response: max_literal.saturating_add(4 * MAX_LINE),
            max_line: MAX_LINE,
        }
    }
}

/// The buffer capacity kept between responses; a larger one (left by a large literal) is
/// freed once it is empty.
const KEEP_CAPACITY: usize = 256 * 1024;

/// The scanner: which bytes form complete units and may go to async-imap.
#[derive(Debug)]
struct Scanner {
    limits: Limits,
    /// Bytes read from the server, not yet handed to async-imap.
    buf: BytesMut,
    /// How many bytes at the front of `buf` are complete units.
    ready: usize,
    /// Where the line being scanned starts in `buf`.
    line_start: usize,
    /// Literal bytes still to come before the line goes on.
    literal_left: usize,
    /// Bytes of the response so far (lines and literals up to a line that ends it).
    response: usize,
}

fn too_large(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// The literal a line announces at its end: `{N}`, `{N+}` (LITERAL+) or `~{N}` (BINARY).
fn announced_literal(line: &[u8]) -> Option<Result<usize, ()>> {
    let line = line.strip_suffix(b"\r\n").or(line.strip_suffix(b"\n"))?;
    let inner = line.strip_suffix(b"}")?;
    let open = inner.iter().rposition(|b| *b == b'{')?;
    let digits = &inner[open + 1..];
    let digits = digits.strip_suffix(b"+").unwrap_or(digits);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // More digits than any usize: too large by any measure.
    Some(
        std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or(()),
    )
}

impl Scanner {
    fn new(limits: Limits) -> Self {
        Self {
            limits,
            buf: BytesMut::new(),
            ready: 0,
            line_start: 0,
            literal_left: 0,
            response: 0,
        }
    }

    /// Everything scanned so far may go out.
    fn release(&mut self) {
        self.ready = self.buf.len();
        self.line_start = self.buf.len();
    }

    /// Takes bytes read from the server.
    fn feed(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            if self.literal_left > 0 {
                let n = self.literal_left.min(data.len());
                self.buf.extend_from_slice(&data[..n]);
                self.literal_left -= n;
                data = &data[n..];
                if self.literal_left == 0 {
                    self.release();
                }
                continue;
            }
            let Some(end) = data.iter().position(|b| *b == b'\n') else {
                self.buf.extend_from_slice(data);
                return self.check_line();
            };
            self.buf.extend_from_slice(&data[..=end]);
            data = &data[end + 1..];
            self.check_line()?;
            self.end_of_line()?;
        }
        Ok(())
    }

    fn check_line(&self) -> io::Result<()> {
        let len = self.buf.len() - self.line_start;
        if len > self.limits.max_line {
            return Err(too_large(format!(
                "the server sent a line longer than {} bytes",
                self.limits.max_line
            )));
        }
        Ok(())
    }

    fn end_of_line(&mut self) -> io::Result<()> {
        let line = &self.buf[self.line_start..];
        let line_len = line.len();
        self.response = self.response.saturating_add(line_len);
        match announced_literal(line) {
            None => {
                self.response = 0;
                self.release();
            }
            Some(n) => {
                let n = n.unwrap_or(usize::MAX);
                if n > self.limits.max_literal
                    || self.response.saturating_add(n) > self.limits.max_response
                {
                    return Err(too_large(format!(
                        "the server announced {n} bytes, more than the {} this server reads \
                         ([email] max_message_mb)",
                        self.limits.max_literal
                    )));
                }
                self.response += n;
                self.literal_left = n;
                if n == 0 {
                    self.release();
                } else {
                    // The line's bytes stay held until the literal is complete.
                    self.line_start = self.buf.len();
                }
            }
        }
        Ok(())
    }

    /// Copies complete units into `out`; returns how many bytes.
    fn drain_into(&mut self, out: &mut ReadBuf<'_>) -> usize {
        let n = self.ready.min(out.remaining());
        out.put_slice(&self.buf[..n]);
        self.buf.advance(n);
        self.ready -= n;
        self.line_start -= n;
        if self.buf.is_empty() && self.buf.capacity() > KEEP_CAPACITY {
            // A large literal has been handed on whole: its buffer goes now, not when the
            // session ends (async-imap holds its own copy, and the caller another).
            self.buf = BytesMut::new();
        }
        n
    }
}

/// The stream async-imap reads: the socket behind a [`Scanner`], with the session permit
/// (released when the session is dropped).
#[derive(Debug)]
pub struct Guarded {
    inner: MailStream,
    scan: Scanner,
    eof: bool,
    _permit: Option<Permit>,
}

impl Guarded {
    pub fn new(inner: MailStream, limits: Limits, permit: Option<Permit>) -> Self {
        Self {
            inner,
            scan: Scanner::new(limits),
            eof: false,
            _permit: permit,
        }
    }

    /// The socket, for STARTTLS (nothing may be buffered then: the server speaks TLS next).
    pub fn into_parts(self) -> (MailStream, Limits, Option<Permit>) {
        (self.inner, self.scan.limits, self._permit)
    }
}

const READ_CHUNK: usize = 64 * 1024;

impl AsyncRead for Guarded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.scan.ready > 0 {
                this.scan.drain_into(out);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                // What is left is an incomplete unit: hand it over, async-imap reports the
                // early end.
                this.scan.release();
                if this.scan.ready > 0 {
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; READ_CHUNK];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    if rb.filled().is_empty() {
                        this.eof = true;
                    } else {
                        this.scan.feed(rb.filled())?;
                    }
                }
            }
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_literal: 100,
            max_response: 200,
            max_line: 64,
        }
    }

    fn drain(s: &mut Scanner) -> Vec<u8> {
        let mut out = vec![0u8; 1024];
        let mut rb = ReadBuf::new(&mut out);
        s.drain_into(&mut rb);
        rb.filled().to_vec()
    }

    #[test]
    fn whole_lines_and_whole_literals_are_handed_on() {
        let mut s = Scanner::new(limits());
        s.feed(b"* OK hel").unwrap();
        assert!(drain(&mut s).is_empty(), "half a line is held");
        s.feed(b"lo\r\n* 1 FETCH (BODY[] {5}\r\nab").unwrap();
        assert_eq!(drain(&mut s), b"* OK hello\r\n");
        s.feed(b"cde").unwrap();
        assert_eq!(drain(&mut s), b"* 1 FETCH (BODY[] {5}\r\nabcde");
        s.feed(b")\r\n").unwrap();
        assert_eq!(drain(&mut s), b")\r\n");
    }

    #[test]
    fn a_literal_beyond_the_cap_is_refused_when_announced() {
        let mut s = Scanner::new(limits());
        let e = s.feed(b"* OK {500000000}\r\n").unwrap_err();
        assert!(e.to_string().contains("500000000"), "{e}");
        assert!(s.buf.len() < 64, "nothing allocated for it");
        let mut s = Scanner::new(limits());
        assert!(s.feed(b"* OK {99999999999999999999999999}\r\n").is_err());
        let mut s = Scanner::new(limits());
        assert!(
            s.feed(b"* 1 FETCH (A ~{101}\r\n").is_err(),
            "BINARY literal"
        );
    }

    #[test]
    fn a_response_of_many_literals_is_bounded_too() {
        let mut s = Scanner::new(limits());
        s.feed(b"* 1 FETCH (A {90}\r\n").unwrap();
        s.feed(&[b'x'; 90]).unwrap();
        assert!(s.feed(b" B {90}\r\n").is_err(), "190 + lines > 200");
    }

    #[test]
    fn a_long_line_without_a_literal_is_refused() {
        let mut s = Scanner::new(limits());
        s.feed(&[b'a'; 60]).unwrap();
        assert!(s.feed(&[b'a'; 10]).is_err());
    }

    #[test]
    fn a_large_literal_s_buffer_is_freed_once_handed_on() {
        let mut s = Scanner::new(Limits::for_literal(4 << 20));
        s.feed(b"* 1 FETCH (BODY[] {2000000}\r\n").unwrap();
        s.feed(&vec![b'x'; 2_000_000]).unwrap();
        s.feed(b")\r\n").unwrap();
        let mut out = vec![0u8; 4 << 20];
        let mut rb = ReadBuf::new(&mut out);
        assert!(s.drain_into(&mut rb) > 2_000_000);
        assert!(s.buf.capacity() <= KEEP_CAPACITY, "{}", s.buf.capacity());
        s.feed(b"* OK next\r\n").unwrap();
        assert_eq!(drain(&mut s), b"* OK next\r\n");
    }

    #[test]
    fn braces_inside_a_line_are_not_literals() {
        let mut s = Scanner::new(limits());
        s.feed(b"* OK {5} not at the end\r\n").unwrap();
        assert_eq!(drain(&mut s), b"* OK {5} not at the end\r\n");
        s.feed(b"* OK {x}\r\n").unwrap();
        assert_eq!(drain(&mut s), b"* OK {x}\r\n");
    }
}
