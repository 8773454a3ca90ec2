//! Route templates of the OpenAPI document: which operation a request path is, and which
//! operations are public (those without a security scheme).
//!
//! The gate matches a request path to its operation template the way the router does
//! (literal segments win over `{parameters}`), then asks [`personal_token_allows`] (the
//! allowlist table is in `services::allowlist`).

use std::collections::BTreeSet;

use crate::services::allowlist::allowlist_entry;
pub use crate::services::allowlist::{personal_token_allows, AllowedRoute, ALLOWLIST_VERSION};

/// The OpenAPI document itself, served beside the API (so it is not one of its operations).
pub const DOCUMENT_PATH: &str = "/openapi.yaml";

#[derive(Debug, Clone)]
struct Template {
    method: String,
    path: String,
    segments: Vec<Segment>,
    /// [`specificity`] of `segments`, computed once.
    specificity: u64,
    /// The operation's personal-token allowlist entry, looked up once.
    personal: Option<AllowedRoute>,
}

#[derive(Debug, Clone)]
struct Group {
    method: String,
    len: usize,
    members: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param,
}

/// The route table of this build's OpenAPI document, built on first use: the document
/// is a pure function of the code, so one table serves every request.
pub fn route_table() -> &'static RouteTable {
    static TABLE: std::sync::OnceLock<RouteTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| RouteTable::from_spec(&super::spec_json()))
}

/// Every (method, path template) of the OpenAPI document.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    templates: Vec<Template>,
    /// Indexes into `templates` by (method, number of segments): a request is compared
    /// only with the templates it could match.
    groups: Vec<Group>,
    /// Paths of the operations without a security scheme.
    public: BTreeSet<String>,
    /// String fields of each operation's JSON body (see [`super::strict_json`]).
    pub string_fields: super::strict_json::StringFields,
}

impl RouteTable {
    pub fn from_spec(spec: &serde_json::Value) -> Self {
        let mut templates = Vec::new();
        let mut public = BTreeSet::new();
        if let Some(paths) = spec["paths"].as_object() {
            for (path, item) in paths {
                let Some(ops) = item.as_object() else {
                    continue;
                };
                for (method, op) in ops {
                    let method = method.to_ascii_uppercase();
                    if !matches!(method.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
                        continue;
                    }
                    if op["security"].as_array().is_none_or(Vec::is_empty) {
                        public.insert(path.clone());
                    }
                    let segments: Vec<Segment> = split(path)
                        .map(|s| {
                            if s.starts_with('{') && s.ends_with('}') {
                                Segment::Param
                            } else {
                                Segment::Literal(s.to_owned())
                            }
                        })
                        .collect();
                    templates.push(Template {
                        personal: allowlist_entry(&method, path),
                        method,
                        path: path.clone(),
                        specificity: specificity(&segments),
                        segments,
                    });
                }
            }
        }
        let mut groups: Vec<Group> = Vec::new();
        for (i, t) in templates.iter().enumerate() {
            let len = t.segments.len();
            match groups
                .iter_mut()
                .find(|g| g.len == len && g.method == t.method)
            {
                Some(g) => g.members.push(i),
                None => groups.push(Group {
                    method: t.method.clone(),
                    len,
                    members: vec![i],
                }),
            }
        }
        Self {
            templates,
            groups,
            public,
            string_fields: super::strict_json::StringFields::from_spec(spec),
        }
    }

    /// The template a concrete request path is routed to, if any. Literal segments win
    /// over parameters, as in the router (`/api/rooms/linked` is not `/api/rooms/{roomId}`).
    pub fn resolve(&self, method: &str, path: &str) -> Option<&str> {
        self.template(method, path).map(|t| t.path.as_str())
    }

    /// The template a concrete request path is routed to with its personal-token
    /// allowlist entry (`None`: personal tokens may not call it).
    pub fn resolve_personal(
        &self,
        method: &str,
        path: &str,
    ) -> Option<(&str, Option<AllowedRoute>)> {
        self.template(method, path)
            .map(|t| (t.path.as_str(), t.personal))
    }

    /// The position of the routed template in [`Self::operations`] (for per-route
    /// counters).
    pub fn index(&self, method: &str, path: &str) -> Option<usize> {
        // Runs on every request: no allocation, one pass per candidate.
        let count = split(path).count();
        let group = self
            .groups
            .iter()
            .find(|g| g.len == count && g.method == method)?;
        group
            .members
            .iter()
            .copied()
            .filter(|&i| {
                self.templates[i]
                    .segments
                    .iter()
                    .zip(split(path))
                    .all(|(s, p)| match s {
                        Segment::Literal(l) => l == p,
                        Segment::Param => !p.is_empty(),
                    })
            })
            .max_by_key(|&i| self.templates[i].specificity)
    }

    fn template(&self, method: &str, path: &str) -> Option<&Template> {
        self.index(method, path).map(|i| &self.templates[i])
    }

    /// Routes reachable without a bearer token: the operations that take no security
    /// scheme, and the document itself.
    pub fn is_public(&self, path: &str) -> bool {
        path == DOCUMENT_PATH || self.public.contains(path)
    }

    /// Whether any operation, whatever its method, is routed at `path`.
    pub fn knows_path(&self, path: &str) -> bool {
        let methods: std::collections::BTreeSet<&str> =
            self.templates.iter().map(|t| t.method.as_str()).collect();
        methods.into_iter().any(|m| self.resolve(m, path).is_some())
    }

    pub fn operations(&self) -> impl Iterator<Item = (&str, &str)> {
        self.templates
            .iter()
            .map(|t| (t.method.as_str(), t.path.as_str()))
    }
}

fn split(path: &str) -> impl Iterator<Item = &str> {
    path.trim_matches('/').split('/')
}

/// Orders templates position by position: a literal earlier in the path beats a parameter
/// there. Bit `63 - i` is set when segment `i` is a literal, so comparing the numbers
/// compares the positions in order (paths have far fewer than 64 segments; later ones
/// are ignored).
fn specificity(segments: &[Segment]) -> u64 {
    segments
        .iter()
        .take(64)
        .enumerate()
        .filter(|(_, s)| matches!(s, Segment::Literal(_)))
        .fold(0, |bits, (i, _)| bits | (1u64 << (63 - i)))
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
            let (resolved, entry) = t.resolve_personal(method, &concrete).unwrap();
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
