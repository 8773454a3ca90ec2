//! Media in the app (issue #32) against the real binary and the real Synapse: link previews
//! through the homeserver's `preview_url` of a page served on loopback ([`previews`]), voice
//! notes as Synapse stores them ([`voice`]), and the web app's images, players, recorder and
//! paste/drop in Chromium ([`browser`]).

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use poem::{get, handler, web::Data, EndpointExt, Response, Route};

use crate::common::serve_standin;

mod browser;
mod previews;
mod voice;

/// A real 1×1 PNG (Synapse decodes a preview's image to size it).
pub(crate) fn tiny_png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
        .unwrap()
}

/// A web site on 127.0.0.1 (the test Synapse allows previews of that address only):
/// `/page` with OpenGraph tags and an image at `/pic.png`, `/plain` with only a title.
pub(crate) struct Site {
    pub base: String,
    /// Requests of `/page` so far.
    pub page_hits: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub(crate) const TITLE: &str = "The pineapple harvest";
pub(crate) const DESCRIPTION: &str = "How the garden club grew pineapples on a balcony.";

#[handler]
fn page(Data(hits): Data<&Arc<AtomicUsize>>, req: &poem::Request) -> Response {
    hits.fetch_add(1, Ordering::SeqCst);
    let host = req
        .headers()
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let html = format!(
        "<!doctype html><html><head><title>ignored</title>\
         <meta property=\"og:title\" content=\"{TITLE}\">\
         <meta property=\"og:description\" content=\"{DESCRIPTION}\">\
         <meta property=\"og:image\" content=\"http://{host}/pic.png\">\
         </head><body><p>Pineapples.</p></body></html>"
    );
    Response::builder()
        .content_type("text/html; charset=utf-8")
        .body(html)
}

#[handler]
fn plain() -> Response {
    Response::builder()
        .content_type("text/html; charset=utf-8")
        .body("<html><head><title>Just a title</title></head><body>x</body></html>")
}

#[handler]
fn pic() -> Response {
    Response::builder()
        .content_type("image/png")
        .body(tiny_png())
}

impl Site {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let app = Route::new()
            .at("/page", get(page))
            .at("/plain", get(plain))
            .at("/pic.png", get(pic))
            .data(hits.clone());
        let (stop, _task) = serve_standin(listener, app);
        Self {
            base: format!("http://127.0.0.1:{port}"),
            page_hits: hits,
            _stop: stop,
        }
    }
}

/// A real `w`×`h` RGB PNG (a gradient), encoded here: browsers must decode it.
pub(crate) fn real_png(w: u32, h: u32) -> Vec<u8> {
    use std::io::Write as _;
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
    }
    let mut raw = Vec::new();
    for y in 0..h {
        raw.push(0); // filter: none
        for x in 0..w {
            raw.extend_from_slice(&[(x * 255 / w) as u8, (y * 255 / h) as u8, 128]);
        }
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).unwrap();
    let idat = z.finish().unwrap();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// A WAV of `ms` milliseconds of a 440 Hz tone (8 kHz, 16-bit mono): browsers play it.
pub(crate) fn wav_tone(ms: u32) -> Vec<u8> {
    let rate = 8000u32;
    let n = rate * ms / 1000;
    let mut b = Vec::with_capacity(44 + 2 * n as usize);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + 2 * n).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * 2).to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(2 * n).to_le_bytes());
    for i in 0..n {
        let t = i as f64 / rate as f64;
        let v = ((t * 440.0 * std::f64::consts::TAU).sin() * 8000.0) as i16;
        b.extend_from_slice(&v.to_le_bytes());
    }
    b
}
