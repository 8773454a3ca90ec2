//! The web app: the files of `assets/`, embedded with rust-embed and served at `/`
//! (docs/design.md, "The web app").
//!
//! - A `GET`/`HEAD` whose path is not the API's ([`is_app_request`]) answers the embedded
//!   file of that path, or `index.html` (client-side routes such as `/inbox` or
//!   `/rooms/!x:y`). Files are looked up by exact name in a table built from the embedded
//!   list, never on a file system, so no path (`/..%2f…`, `%00`) can reach anything else.
//! - Each file is read, hashed (its ETag) and gzipped once, when the application is built;
//!   a request only picks the stored representation: gzip when `Accept-Encoding` allows it
//!   (`Vary: Accept-Encoding`), 304 when `If-None-Match` names the current ETag.
//! - Every answer carries the app's CSP, `nosniff` and `no-referrer` ([`SECURITY_HEADERS`]);
//!   every file is `Cache-Control: no-cache` (file names carry no hash, so browsers
//!   revalidate with the ETag and a new binary's files are seen at once).
//! - The gate counts these requests against a budget of their own
//!   (`[rate_limit] static_requests` per address), never against the API's.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::OnceLock;

use bytes::Bytes;
use poem::http::{header, HeaderValue, Method, StatusCode};
use poem::{Endpoint, IntoResponse, Request, Response};
use rust_embed::RustEmbed;
use sha2::{Digest, Sha256};

use super::encoding::accepts_gzip;

#[derive(RustEmbed)]
#[folder = "assets/"]
struct Files;

/// The page every client-side route answers with.
pub const INDEX: &str = "index.html";

/// Headers of every answer of the app (docs/security.md: no inline script or style, nothing
/// from another origin, no framing). `media-src 'self' blob:`: audio and video play from
/// `blob:` URLs the page made of bytes it fetched with its token (without it `default-src
/// 'self'` governs media, and a `blob:` URL is not `'self'`: Chromium refuses to play it).
pub const SECURITY_HEADERS: [(&str, &str); 3] = [
    (
        "content-security-policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; \
         media-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
         form-action 'self'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

/// Paths that keep their meaning and never answer the app (also their sub-paths).
const RESERVED: [&str; 5] = ["/api", "/health", "/openapi.yaml", "/mcp", "/metrics"];

/// Files smaller than this are sent as they are (gzip would save nothing worth a header).
const MIN_GZIP_BYTES: usize = 256;

/// One embedded file, ready to send.
struct Asset {
    content_type: &'static str,
    body: Bytes,
    /// The gzip representation, when the type compresses and it came out smaller.
    gzip: Option<Bytes>,
    /// Strong ETag of the identity body (quoted); the gzip body's adds `-gz`.
    etag: String,
    etag_gzip: String,
}

/// Whether a request is for the web app: a `GET` or `HEAD` outside the API's paths.
pub fn is_app_request(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && !RESERVED.iter().any(|r| {
            path.strip_prefix(r)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

/// The embedded files by name, read, hashed and compressed on first use
/// ([`super::app`] makes that first use happen at start).
fn catalog() -> &'static HashMap<String, Asset> {
    static CATALOG: OnceLock<HashMap<String, Asset>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut raw: Vec<(String, Vec<u8>)> = Files::iter()
            .filter_map(|name| Some((name.to_string(), Files::get(&name)?.data.into_owned())))
            .collect();
        raw.sort();
        if let Some(i) = raw.iter().position(|(name, _)| name == SERVICE_WORKER) {
            let shell = service_worker(&raw[i].1, &raw);
            raw[i].1 = shell;
        }
        raw.into_iter()
            .map(|(name, body)| {
                let asset = prepare(&name, body);
                (name, asset)
            })
            .collect()
    })
}

/// The service worker, served at `/sw.js` so its scope is the whole app.
pub const SERVICE_WORKER: &str = "sw.js";

/// Fills in the service worker's app shell: `__SHELL_VERSION__` becomes a hash of every
/// other embedded file (so a new build installs a new cache and drops the old one), and
/// `__SHELL_FILES__` the JSON list of their paths (a JSON string literal's content).
fn service_worker(template: &[u8], files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    let mut paths = Vec::new();
    for (name, body) in files.iter().filter(|(n, _)| n != SERVICE_WORKER) {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(Sha256::digest(body));
        if !name.ends_with(".md") && !name.ends_with(".d.ts") && !name.ends_with(".txt") {
            paths.push(format!("/{name}"));
        }
    }
    let version = hex::encode(&hasher.finalize()[..8]);
    // Inside a single-quoted JS string: the JSON has no single quotes or backslashes
    // (embedded file names are plain paths).
    let list = serde_json::to_string(&paths).unwrap_or_else(|_| "[]".into());
    String::from_utf8_lossy(template)
        .replace("__SHELL_VERSION__", &version)
        .replace("__SHELL_FILES__", &list)
        .into_bytes()
}

/// Builds the table of embedded files now; returns how many there are.
pub fn load() -> usize {
    let files = catalog();
    if !files.contains_key(INDEX) {
        tracing::warn!("assets/{INDEX} is not embedded: the web app answers 404");
    }
    files.len()
}

fn prepare(name: &str, body: Vec<u8>) -> Asset {
    let content_type = content_type(name);
    let digest = Sha256::digest(&body);
    let hash = hex::encode(&digest[..16]);
    let gzip = compressible(content_type)
        .then(|| gzip(&body))
        .flatten()
        .filter(|z| body.len() >= MIN_GZIP_BYTES && z.len() < body.len())
        .map(Bytes::from);
    Asset {
        content_type,
        body: Bytes::from(body),
        gzip,
        etag: format!("\"{hash}\""),
        etag_gzip: format!("\"{hash}-gz\""),
    }
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(body).ok()?;
    encoder.finish().ok()
}

/// Content type by extension (JavaScript modules must be a JavaScript type, or browsers
/// refuse them under `nosniff`).
pub fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

fn compressible(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.starts_with("application/json")
        || content_type.starts_with("application/manifest+json")
        || content_type.starts_with("image/svg+xml")
        || content_type == "application/wasm"
}

/// Whether `If-None-Match` names one of `tags` (or is `*`).
fn not_modified(req: &Request, tags: [&str; 2]) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || tags.contains(&t))
}

/// Sets the headers every answer of the app carries.
pub fn set_security_headers(resp: &mut Response) {
    for (name, value) in SECURITY_HEADERS {
        resp.headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
}

/// The answer to an app request (see [`is_app_request`]).
pub fn respond(req: &Request) -> Response {
    let files = catalog();
    let name = req.uri().path().trim_start_matches('/');
    let asset = files
        .get(name)
        .filter(|_| !name.is_empty())
        .or_else(|| files.get(INDEX));
    let Some(asset) = asset else {
        return super::error::json_body(
            StatusCode::NOT_FOUND,
            crate::error::ErrorCode::NotFound,
            "the web app is not part of this build",
        );
    };
    let gzip = asset.gzip.as_ref().filter(|_| accepts_gzip(req.headers()));
    let etag = if gzip.is_some() {
        &asset.etag_gzip
    } else {
        &asset.etag
    };
    let mut resp = if not_modified(req, [&asset.etag, &asset.etag_gzip]) {
        Response::builder()
            .status(StatusCode::NOT_MODIFIED)
            .finish()
    } else {
        let mut builder = Response::builder()
            .status(StatusCode::OK)
            .content_type(asset.content_type);
        if gzip.is_some() {
            builder = builder.header(header::CONTENT_ENCODING, "gzip");
        }
        // HEAD: hyper sends the head only, with this body's length.
        builder.body(gzip.unwrap_or(&asset.body).clone())
    };
    let headers = resp.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if asset.gzip.is_some() {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    set_security_headers(&mut resp);
    resp
}

/// Middleware: answers app requests from the embedded files, passes the rest on.
pub async fn serve<E: Endpoint>(ep: std::sync::Arc<E>, req: Request) -> poem::Result<Response> {
    if is_app_request(req.method(), req.uri().path()) {
        return Ok(respond(&req));
    }
    ep.call(req).await.map(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_never_answer_the_app() {
        for path in [
            "/api",
            "/api/",
            "/api/nope",
            "/health",
            "/health/x",
            "/openapi.yaml",
            "/mcp",
            "/mcp/x",
            "/metrics",
        ] {
            assert!(!is_app_request(&Method::GET, path), "{path}");
        }
        for path in ["/", "/inbox", "/rooms/!x:y", "/apix", "/app.js", "/healthy"] {
            assert!(is_app_request(&Method::GET, path), "{path}");
            assert!(is_app_request(&Method::HEAD, path), "{path}");
            assert!(!is_app_request(&Method::POST, path), "{path}");
        }
    }

    #[test]
    fn types_by_extension() {
        assert_eq!(content_type("a/b.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("x.mjs"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("s.CSS"), "text/css; charset=utf-8");
        assert_eq!(content_type("f.woff2"), "font/woff2");
        assert_eq!(content_type("m.webmanifest"), "application/manifest+json");
        assert_eq!(content_type("LICENSE"), "application/octet-stream");
    }

    #[test]
    fn the_index_is_embedded_and_prepared() {
        let index = catalog().get(INDEX).expect("assets/index.html is embedded");
        assert!(index.content_type.starts_with("text/html"));
        assert_eq!(index.etag.len(), 34);
        assert_ne!(index.etag, index.etag_gzip);
    }
}
