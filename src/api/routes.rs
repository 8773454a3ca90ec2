//! Route templates of the OpenAPI document, and the personal-token allowlist.
//!
//! The gate matches a request path to its operation template the way the router does
//! (literal segments win over `{parameters}`), then asks [`personal_token_allows`].
//! Anything not listed here is denied to personal tokens: a route added later is
//! unavailable to them until it is listed, and tokens created before it was listed must
//! opt in (`PATCH /api/developer/tokens/{id}` with `{"optIn": true}`). Entries marked
//! `explicit` (search, which reads across every room at once) need that opt-in from every
//! token, also from tokens created after the entry was added.

pub use crate::services::tokens::ALLOWLIST_VERSION;

/// One operation personal tokens may call.
#[derive(Debug, Clone, Copy)]
pub struct AllowedRoute {
    pub method: &'static str,
    pub path: &'static str,
    /// Allowlist version that added the entry.
    pub since: u32,
    /// Only for tokens explicitly opted in at `since` or later, whatever their creation.
    pub explicit: bool,
}

const fn allow(method: &'static str, path: &'static str) -> AllowedRoute {
    AllowedRoute {
        method,
        path,
        since: 1,
        explicit: false,
    }
}

/// An entry that needs the token's own opt-in (see the module docs).
const fn explicit(method: &'static str, path: &'static str, since: u32) -> AllowedRoute {
    AllowedRoute {
        method,
        path,
        since,
        explicit: true,
    }
}

/// The contract's allowed list (section 5), including the inverse actions of allowed
/// ones (unarchive, unmute, unpin, unfavorite).
pub const PERSONAL_TOKEN_ALLOWLIST: &[AllowedRoute] = &[
    // Rooms: list, get, mark read, mute, archive, favorite, pin (and their inverses).
    allow("GET", "/api/rooms"),
    allow("GET", "/api/rooms/{roomId}"),
    allow("POST", "/api/rooms/{roomId}/read"),
    allow("POST", "/api/rooms/{roomId}/archive"),
    allow("POST", "/api/rooms/{roomId}/unarchive"),
    allow("POST", "/api/rooms/{roomId}/mute"),
    allow("POST", "/api/rooms/{roomId}/unmute"),
    allow("POST", "/api/rooms/{roomId}/favorite"),
    allow("POST", "/api/rooms/{roomId}/unfavorite"),
    allow("POST", "/api/rooms/{roomId}/pin"),
    allow("POST", "/api/rooms/{roomId}/unpin"),
    // Messages: readable history and approved text sending.
    allow("GET", "/api/messages"),
    allow("POST", "/api/rooms/{roomId}/messages"),
    // Real-time sync.
    allow("GET", "/api/sync"),
    // E-mail.
    allow("GET", "/api/email/threads"),
    allow("PUT", "/api/email/threads/{id}"),
    allow("GET", "/api/email/messages/{id}"),
    allow("POST", "/api/email/compose"),
    allow("GET", "/api/email/labels"),
    allow("POST", "/api/email/labels"),
    allow("GET", "/api/email/signatures"),
    allow("POST", "/api/email/signatures"),
    // Reminders.
    allow("GET", "/api/reminders"),
    allow("POST", "/api/reminders"),
    allow("PUT", "/api/reminders/{id}"),
    allow("DELETE", "/api/reminders/{id}"),
    // Read-only bridges.
    allow("GET", "/api/bridges"),
    allow("GET", "/api/bridges/configured"),
    allow("GET", "/api/bridges/dashboard"),
    allow("GET", "/api/bridges/chat-counts"),
    // Search across every room and mailbox: explicit opt-in per token.
    explicit("GET", "/api/search", 2),
];

/// Routes reachable without a bearer token (contract section 5).
pub fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/health" | "/openapi.yaml" | "/api/auth/code" | "/api/auth/verify" | "/api/auth/refresh"
    ) || path == "/api/attestation"
        || path.starts_with("/api/attestation/")
}

/// Whether a personal token with allowlist version `token_version`, explicitly opted in at
/// `opted_in_version` (0: never), may call `template`.
pub fn personal_token_allows(
    method: &str,
    template: &str,
    token_version: u32,
    opted_in_version: u32,
) -> bool {
    PERSONAL_TOKEN_ALLOWLIST.iter().any(|r| {
        r.method == method
            && r.path == template
            && r.since <= token_version
            && (!r.explicit || r.since <= opted_in_version)
    })
}

#[derive(Debug, Clone)]
struct Template {
    method: String,
    path: String,
    segments: Vec<Segment>,
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
    /// String fields of each operation's JSON body (see [`super::strict_json`]).
    pub string_fields: super::strict_json::StringFields,
}

impl RouteTable {
    pub fn from_spec(spec: &serde_json::Value) -> Self {
        let mut templates = Vec::new();
        if let Some(paths) = spec["paths"].as_object() {
            for (path, item) in paths {
                let Some(ops) = item.as_object() else {
                    continue;
                };
                for method in ops.keys() {
                    let method = method.to_ascii_uppercase();
                    if !matches!(method.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
                        continue;
                    }
                    templates.push(Template {
                        method,
                        path: path.clone(),
                        segments: split(path)
                            .map(|s| {
                                if s.starts_with('{') && s.ends_with('}') {
                                    Segment::Param
                                } else {
                                    Segment::Literal(s.to_owned())
                                }
                            })
                            .collect(),
                    });
                }
            }
        }
        Self {
            templates,
            string_fields: super::strict_json::StringFields::from_spec(spec),
        }
    }

    /// The template a concrete request path is routed to, if any. Literal segments win
    /// over parameters, as in the router (`/api/rooms/linked` is not `/api/rooms/{roomId}`).
    pub fn resolve(&self, method: &str, path: &str) -> Option<&str> {
        let parts: Vec<&str> = split(path).collect();
        self.templates
            .iter()
            .filter(|t| t.method == method && t.segments.len() == parts.len())
            .filter(|t| {
                t.segments.iter().zip(&parts).all(|(s, p)| match s {
                    Segment::Literal(l) => l == p,
                    Segment::Param => !p.is_empty(),
                })
            })
            .max_by_key(|t| specificity(&t.segments))
            .map(|t| t.path.as_str())
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

/// Compares templates position by position: a literal earlier in the path beats a
/// parameter there.
fn specificity(segments: &[Segment]) -> Vec<bool> {
    segments
        .iter()
        .map(|s| matches!(s, Segment::Literal(_)))
        .collect()
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
    fn public_routes_are_exactly_the_contracts() {
        for p in [
            "/health",
            "/openapi.yaml",
            "/api/attestation",
            "/api/auth/code",
            "/api/auth/verify",
            "/api/auth/refresh",
        ] {
            assert!(is_public(p), "{p}");
        }
        for p in [
            "/api/auth/me",
            "/api/auth/logout",
            "/api/rooms",
            "/api/attestationx",
            "/",
        ] {
            assert!(!is_public(p), "{p}");
        }
    }
}
