//! Content negotiation of compressed answers: which requests accept gzip, and the cached
//! pages sent in that form ([`crate::services::pages::Page`]).

use poem::http::header::{self, HeaderMap, HeaderValue};
use poem::Response;

use crate::services::pages::Page;

/// Whether `Accept-Encoding` allows gzip (`gzip` or `*` with a q-value above 0).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let coding = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
        })
}

/// A response carrying a compressible cached page (see [`super::fast_json::FastJson`]):
/// sent gzip-compressed when `accepts_gzip`, and marked as varying with `Accept-Encoding`
/// either way (so a shared cache never hands one form to a client that asked for the
/// other).
pub async fn negotiate(resp: &mut Response, accepts_gzip: bool) {
    let Some(page) = resp.extensions_mut().remove::<Page>() else {
        return;
    };
    resp.headers_mut()
        .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    if !accepts_gzip {
        return;
    }
    if let Some(gzip) = page.gzip().await {
        resp.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        resp.set_body(gzip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(value: &str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        accepts_gzip(&headers)
    }

    #[test]
    fn gzip_is_accepted_unless_refused_by_a_zero_quality() {
        assert!(accepts("gzip, deflate, br, zstd"));
        assert!(accepts("br;q=1.0, GZIP;q=0.5"));
        assert!(accepts("*"));
        assert!(!accepts("gzip;q=0"));
        assert!(!accepts("br, deflate"));
        assert!(!accepts("identity"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
