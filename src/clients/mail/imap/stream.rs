//! The byte stream under an IMAP session: plain TCP, or TLS by tokio-rustls with the
//! aws-lc-rs provider and the webpki roots.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls;

use super::{ImapError, Result};

/// A plain or TLS TCP stream.
#[derive(Debug)]
pub enum MailStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for MailStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for MailStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

fn tls_connector() -> tokio_rustls::TlsConnector {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

pub(super) async fn tls(host: &str, tcp: TcpStream) -> Result<MailStream> {
    tls_stream(host, tcp).await.map_err(ImapError::Unreachable)
}

/// TLS over `tcp`, the certificate checked for `host` (IMAP and implicit-TLS SMTP).
pub(crate) async fn tls_stream(
    host: &str,
    tcp: TcpStream,
) -> std::result::Result<MailStream, String> {
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| format!("{host}: {e}"))?;
    let stream = tls_connector()
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {host}: {e}"))?;
    Ok(MailStream::Tls(Box::new(stream)))
}

/// A stream that fails once the server has sent more than `left` bytes: an SMTP server's
/// answers are a few lines, and lettre reads a line without a bound before checking it.
///
/// It also refuses every write once its [`Halt`] is pulled: a message streamed into
/// lettre's `DATA` whose source fails half-way must not get the `.` that ends it (lettre
/// writes one after the last piece whatever happened), so the transaction breaks off and
/// the server delivers nothing.
#[derive(Debug)]
pub struct Capped {
    inner: MailStream,
    left: usize,
    halt: Halt,
}

/// The switch that makes a [`Capped`] stream refuse writes.
#[derive(Debug, Clone, Default)]
pub struct Halt(Arc<std::sync::atomic::AtomicBool>);

impl Halt {
    pub fn pull(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn pulled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn halted() -> std::io::Error {
    std::io::Error::other("the message was abandoned before its end")
}

impl Capped {
    pub fn new(inner: MailStream, cap: usize) -> Self {
        Self {
            inner,
            left: cap,
            halt: Halt::default(),
        }
    }

    /// The switch of this stream (kept by whoever feeds it).
    pub fn halt(&self) -> Halt {
        self.halt.clone()
    }
}

impl AsyncRead for Capped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.left == 0 {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the server sent more than a mail server's answers hold",
            )));
        }
        let mut tmp = [0u8; 8192];
        let want = this.left.min(buf.remaining()).min(tmp.len());
        let mut limited = ReadBuf::new(&mut tmp[..want]);
        let res = Pin::new(&mut this.inner).poll_read(cx, &mut limited);
        let n = limited.filled().len();
        buf.put_slice(limited.filled());
        this.left -= n;
        res
    }
}

impl AsyncWrite for Capped {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.halt.pulled() {
            return Poll::Ready(Err(halted()));
        }
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.halt.pulled() {
            return Poll::Ready(Err(halted()));
        }
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl lettre::transport::smtp::client::AsyncTokioStream for Capped {
    fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match &self.inner {
            MailStream::Plain(s) => s.peer_addr(),
            MailStream::Tls(s) => s.get_ref().0.peer_addr(),
        }
    }
}
