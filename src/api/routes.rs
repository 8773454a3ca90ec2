//! Route templates of the OpenAPI document: which operation a request path is, and which
//! operations are public (those without a security scheme).
//!
//! A request path is matched to its template by poem's own router ([`PathMatcher`]), so
//! the gate judges exactly the operation the router will run; the gate then asks
//! [`personal_token_allows`] (the allowlist table is in `services::allowlist`).

use super::route_match::PathMatcher;
use crate::services::allowlist::allowlist_entry;
pub use crate::services::allowlist::{personal_token_allows, AllowedRoute, ALLOWLIST_VERSION};

/// The OpenAPI document itself, served beside the API (so it is not one of its operations).
pub const DOCUMENT_PATH: &str = "/openapi.yaml";

struct Template {
    method: String,
    path: String,
    /// The operation's personal-token allowlist entry, looked up once.
    personal: Option<AllowedRoute>,
}

/// One path template and the operations at it.
struct PathEntry {
    path: String,
    /// Some operation at this path takes no security scheme.
    public: bool,
    /// Positions in [`RouteTable::templates`].
    operations: Vec<usize>,
}

/// The router's verdict on a request path: the position of its path template, if any.
/// Computed once per request by the outermost layer ([`super::observe`]) and kept in the
/// request's extensions for the gate and the body guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matched(Option<usize>);

/// The route table of this build's OpenAPI document, built on first use: the document
/// is a pure function of the code, so one table serves every request.
pub fn route_table() -> &'static RouteTable {
    static TABLE: std::sync::OnceLock<RouteTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| RouteTable::from_spec(&super::spec_json()))
}

/// Every (method, path template) of the OpenAPI document, and poem's router over their
/// paths ([`PathMatcher`]): a request is named exactly as the router routes it.
pub struct RouteTable {
    templates: Vec<Template>,
    /// The distinct paths of `templates`, then [`DOCUMENT_PATH`].
    paths: Vec<PathEntry>,
    matcher: PathMatcher,
    /// String fields of each operation's JSON body (see [`super::strict_json`]).
    pub string_fields: super::strict_json::StringFields,
}

impl RouteTable {
    pub fn from_spec(spec: &serde_json::Value) -> Self {
        let mut templates = Vec::new();
        let mut paths: Vec<PathEntry> = Vec::new();
        if let Some(items) = spec["paths"].as_object() {
            for (path, item) in items {
                let Some(ops) = item.as_object() else {
                    continue;
                };
                let mut entry = PathEntry {
                    path: path.clone(),
                    public: false,
                    operations: Vec::new(),
                };
                for (method, op) in ops {
                    let method = method.to_ascii_uppercase();
                    if !matches!(method.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
                        continue;
                    }
                    if op["security"].as_array().is_none_or(Vec::is_empty) {
                        entry.public = true;
                    }
                    entry.operations.push(templates.len());
                    templates.push(Template {
                        personal: allowlist_entry(&method, path),
                        method,
                        path: path.clone(),
                    });
                }
                if !entry.operations.is_empty() {
                    paths.push(entry);
                }
            }
        }
        // The document is served beside the API by the same router, without a scheme.
        paths.push(PathEntry {
            path: DOCUMENT_PATH.to_owned(),
            public: true,
            operations: Vec::new(),
        });
        let matcher = PathMatcher::new(paths.iter().map(|p| p.path.as_str()));
        Self {
            templates,
            paths,
            matcher,
            string_fields: super::strict_json::StringFields::from_spec(spec),
        }
    }

    /// The router's verdict on `req`'s path: the one [`super::observe`] filed, or
    /// computed now (requests made inside the server, e.g. by `/mcp`, skip that layer).
    pub fn matched(&self, req: &poem::Request) -> Matched {
        match req.extensions().get::<Matched>() {
            Some(m) => *m,
            None => self.match_uri(req.uri()),
        }
    }

    pub fn match_uri(&self, uri: &poem::http::Uri) -> Matched {
        Matched(self.matcher.find(uri))
    }

    fn match_path(&self, path: &str) -> Matched {
        path.parse()
            .map_or(Matched(None), |uri| self.match_uri(&uri))
    }

    /// The operation (position in [`Self::operations`]) of `method` at the matched path.
    pub fn operation(&self, matched: Matched, method: &str) -> Option<usize> {
        let entry = &self.paths[matched.0?];
        entry
            .operations
            .iter()
            .copied()
            .find(|&i| self.templates[i].method == method)
    }

    /// The template a concrete request path is routed to, if any. Literal segments win
    /// over parameters, as in the router (`/api/rooms/linked` is not `/api/rooms/{roomId}`).
    pub fn resolve(&self, method: &str, path: &str) -> Option<&str> {
        self.resolve_at(self.match_path(path), method)
    }

    /// [`Self::resolve`] of a path already matched.
    pub fn resolve_at(&self, matched: Matched, method: &str) -> Option<&str> {
        self.operation(matched, method)
            .map(|i| self.templates[i].path.as_str())
    }

    /// The template the matched path is routed to for `method`, with its personal-token
    /// allowlist entry (`None`: personal tokens may not call it).
    pub fn resolve_personal(
        &self,
        matched: Matched,
        method: &str,
    ) -> Option<(&str, Option<AllowedRoute>)> {
        self.operation(matched, method).map(|i| {
            let t = &self.templates[i];
            (t.path.as_str(), t.personal)
        })
    }

    /// The position of the routed operation in [`Self::operations`] (for per-route
    /// counters).
    pub fn index(&self, method: &str, path: &str) -> Option<usize> {
        self.operation(self.match_path(path), method)
    }

    /// Whether the matched path is reachable without a bearer token: an operation there
    /// takes no security scheme, or it is the document itself.
    pub fn is_public_at(&self, matched: Matched) -> bool {
        matched.0.is_some_and(|i| self.paths[i].public)
    }

    /// [`Self::is_public_at`] of a concrete path.
    pub fn is_public(&self, path: &str) -> bool {
        self.is_public_at(self.match_path(path))
    }

    /// Whether the matched path is the document's own (not one of its operations).
    pub fn is_document(&self, matched: Matched) -> bool {
        matched.0 == Some(self.paths.len() - 1)
    }

    /// Whether any operation, whatever its method, is routed at the matched path.
    pub fn knows(&self, matched: Matched) -> bool {
        matched
            .0
            .is_some_and(|i| !self.paths[i].operations.is_empty())
    }

    /// [`Self::knows`] of a concrete path.
    pub fn knows_path(&self, path: &str) -> bool {
        self.knows(self.match_path(path))
    }

    pub fn operations(&self) -> impl Iterator<Item = (&str, &str)> {
        self.templates
            .iter()
            .map(|t| (t.method.as_str(), t.path.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> RouteTable {
        RouteTable::from_spec(&serde_json::json!({"paths": {
            "/api/rooms": {"get": {}},
            "/api/rooms/{roomId}": {"get": {}, "delete": {}},
            "/api/rooms/linked": {"get": {}},
            "/api/rooms/linked/{groupId}": {"get": {}},
            "/api/rooms/{roomId}/read": {"post": {}},
        }}))
    }

    #[test]
    fn literal_segments_win_over_parameters() {
        let t = table();
        assert_eq!(
            t.resolve("GET", "/api/rooms/linked"),
            Some("/api/rooms/linked")
        );
        assert_eq!(
            t.resolve("GET", "/api/rooms/%21abc%3Ahost"),
            Some("/api/rooms/{roomId}")
        );
        assert_eq!(
            t.resolve("GET", "/api/rooms/linked/5"),
            Some("/api/rooms/linked/{groupId}")
        );
        assert_eq!(
            t.resolve("POST", "/api/rooms/x/read"),
            Some("/api/rooms/{roomId}/read")
        );
        assert_eq!(t.resolve("PUT", "/api/rooms/x"), None);
        assert_eq!(t.resolve("GET", "/api/nothing"), None);
    }

    #[test]
    fn the_precomputed_allowlist_entries_agree_with_the_table() {
        let t = route_table();
        for (method, template) in t.operations() {
            let concrete = template.replace('{', "x").replace('}', "");
            let matched = t.match_uri(&concrete.parse().unwrap());
            let (resolved, entry) = t.resolve_personal(matched, method).unwrap();
            assert_eq!(resolved, template);
            for version in 0..=ALLOWLIST_VERSION + 1 {
                for opted in [0, version] {
                    assert_eq!(
                        entry.is_some_and(|e| e.admits(version, opted)),
                        personal_token_allows(method, template, version, opted),
                        "{method} {template} v{version} opted {opted}"
                    );
                }
            }
        }
    }

    #[test]
    fn personal_tokens_are_denied_what_is_not_listed() {
        assert!(personal_token_allows("GET", "/api/rooms", 1, 0));
        assert!(!personal_token_allows(
            "DELETE",
            "/api/rooms/{roomId}",
            1,
            0
        ));
        assert!(!personal_token_allows("GET", "/api/rooms/linked", 1, 0));
        assert!(!personal_token_allows("GET", "/api/rooms", 0, 0));
    }

    #[test]
    fn search_needs_an_explicit_opt_in_even_for_new_tokens() {
        // A token created under the current version, never opted in.
        assert!(!personal_token_allows(
            "GET",
            "/api/search",
            ALLOWLIST_VERSION,
            0
        ));
        assert!(personal_token_allows(
            "GET",
            "/api/search",
            ALLOWLIST_VERSION,
            ALLOWLIST_VERSION
        ));
        assert!(!personal_token_allows("GET", "/api/search", 1, 1));
    }

    #[test]
    fn public_routes_are_exactly_the_operations_without_a_scheme() {
        let t = route_table();
        for p in [
            "/health",
            "/openapi.yaml",
            "/api/attestation",
            "/api/auth/code",
            "/api/auth/verify",
            "/api/auth/refresh",
        ] {
            assert!(t.is_public(p), "{p}");
        }
        for p in [
            "/api/auth/me",
            "/api/auth/logout",
            "/api/rooms",
            "/api/attestationx",
            "/api/attestation/x",
            "/",
        ] {
            assert!(!t.is_public(p), "{p}");
        }
    }
}
