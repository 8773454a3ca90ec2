//! Which path template a request path is, decided by poem's own router.
//!
//! The gate (authentication, the personal-token allowlist, public routes), the body guard
//! and the metrics must name a request exactly as the router that later runs its handler
//! does: a matcher of our own that disagrees anywhere (`/api/rooms//media/x`, where poem
//! routes an empty `{roomId}` but a segment-by-segment matcher sees no operation) lets a
//! request reach a handler the gate judged as "no such route". So the templates of the
//! OpenAPI document are loaded into a [`poem::Route`] (the same radix tree, the same
//! precedence of literals over parameters, the same empty and percent-encoded segments),
//! and the pattern that tree reports is the answer.

use std::collections::HashMap;

use futures_util::FutureExt as _;
use poem::endpoint::make_sync;
use poem::{Endpoint, PathPattern, Request, Response, Route};

/// The router's tree of every path template, and each template's position.
pub struct PathMatcher {
    router: Route,
    /// The router's pattern (`/api/rooms/:roomId`) → position in `templates`.
    by_pattern: HashMap<String, usize>,
}

impl PathMatcher {
    /// `templates` in the document's form (`/api/rooms/{roomId}`); a match answers the
    /// position of one of them.
    pub fn new<'a>(templates: impl IntoIterator<Item = &'a str>) -> Self {
        let mut router = Route::new();
        let mut by_pattern = HashMap::new();
        for (i, template) in templates.into_iter().enumerate() {
            let pattern = router_pattern(template);
            // The leaf is never answered to a client: only the pattern it was filed
            // under matters.
            router = router.at(&pattern, make_sync(|_| Response::default()));
            by_pattern.insert(pattern, i);
        }
        Self { router, by_pattern }
    }

    /// The position of the template `path` is routed to, if any.
    pub fn find(&self, uri: &poem::http::Uri) -> Option<usize> {
        let probe = Request::builder().uri(uri.clone()).finish();
        // Every leaf is synchronous and the router awaits nothing else: the call is
        // complete when first polled.
        let routed = self.router.call(probe).now_or_never()?.ok()?;
        let PathPattern(pattern) = routed.data::<PathPattern>()?;
        self.by_pattern.get(&**pattern).copied()
    }
}

/// `{name}` segments as poem's `:name` (how poem-openapi registers the same operations).
fn router_pattern(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment.strip_prefix('{') {
            Some(rest) => format!(":{}", rest.trim_end_matches('}')),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(m: &PathMatcher, path: &str) -> Option<usize> {
        m.find(&path.parse().unwrap())
    }

    #[test]
    fn it_answers_what_the_router_routes() {
        let m = PathMatcher::new([
            "/api/rooms",
            "/api/rooms/{roomId}",
            "/api/rooms/linked",
            "/api/rooms/{roomId}/media/{eventId}",
        ]);
        assert_eq!(find(&m, "/api/rooms"), Some(0));
        assert_eq!(find(&m, "/api/rooms/%21a%3Ah"), Some(1));
        assert_eq!(find(&m, "/api/rooms/linked"), Some(2));
        assert_eq!(find(&m, "/api/rooms/x/media/y?z=1"), Some(3));
        // Empty parameters are routed by poem, so they are operations here too.
        assert_eq!(find(&m, "/api/rooms//media/x"), Some(3));
        // A trailing slash is not an empty parameter to poem: no operation, as routed.
        assert_eq!(find(&m, "/api/rooms/"), None);
        assert_eq!(find(&m, "/api/roomsx"), None);
        assert_eq!(find(&m, "/api/rooms/x/media"), None);
    }

    #[test]
    fn templates_become_router_patterns() {
        assert_eq!(
            router_pattern("/api/rooms/{roomId}/media/{eventId}"),
            "/api/rooms/:roomId/media/:eventId"
        );
        assert_eq!(router_pattern("/health"), "/health");
    }
}
