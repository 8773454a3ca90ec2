//! The security schemes. Obtaining one IS the check: the gate has already verified the
//! bearer token and stored the [`Principal`]; the scheme's checker hands it to the handler
//! (or refuses), and documents the requirement in the OpenAPI document.
//!
//! - [`TokenAuth`]: a native session or a personal API token; taken by exactly the
//!   operations of the personal-token allowlist (`services::allowlist`).
//! - [`NativeAuth`]: a native session only (403 `forbidden_for_api_token` otherwise);
//!   taken by every other authenticated operation.
//! - [`AdminAuth`]: a native session of an administrator (403 `admin_required`).
//!
//! All three appear in the document as its one `bearerAuth` scheme. Operations without a
//! scheme are the public routes; the gate reads them from the document.

use poem::Request;
use poem_openapi::auth::Bearer;
use poem_openapi::SecurityScheme;

use crate::error::{AppError, ErrorCode};
use crate::services::admin;
use crate::services::session::Principal;
use crate::state::AppState;
use crate::store::users::UserRow;

/// Declares one of the schemes: all three are the document's one `bearerAuth` scheme (one
/// spelling, so its entry cannot differ by the scheme that registered it); only the
/// checker, and what it hands to the handler, differ.
macro_rules! bearer_scheme {
    ($(#[doc = $doc:tt])* $name:ident($inner:ty) checked by $checker:tt) => {
        $(#[doc = $doc])*
        #[derive(SecurityScheme)]
        #[oai(
            rename = "bearerAuth",
            ty = "bearer",
            bearer_format = "JWT or csk_ personal token",
            checker = $checker
        )]
        pub struct $name(pub $inner);
    };
}

bearer_scheme! {
    /// `Authorization: Bearer <token>`: a JWT access token from `/api/auth/verify`, or a
    /// personal API token (`csk_…`, 52 characters) on the routes that allow them.
    TokenAuth(Principal) checked by "principal_of"
}

bearer_scheme! {
    /// The same `bearerAuth` scheme, for operations personal tokens may not use.
    NativeAuth(Principal) checked by "native_principal_of"
}

bearer_scheme! {
    /// The same `bearerAuth` scheme for `/api/admin/*`: obtaining it additionally requires an
    /// administrator (403 `admin_required` otherwise; 403 `forbidden_for_api_token` for
    /// personal tokens).
    AdminAuth(UserRow) checked by "admin_of"
}

fn principal(req: &Request) -> Result<Principal, AppError> {
    req.extensions()
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| AppError::unauthorized("authentication required"))
}

async fn principal_of(req: &Request, _bearer: Bearer) -> poem::Result<Principal> {
    Ok(principal(req)?)
}

async fn native_principal_of(req: &Request, _bearer: Bearer) -> poem::Result<Principal> {
    let principal = principal(req)?;
    if principal.is_api_token() {
        return Err(AppError::forbidden(
            ErrorCode::ForbiddenForApiToken,
            "this route is not available to personal API tokens",
        )
        .into());
    }
    Ok(principal)
}

async fn admin_of(req: &Request, _bearer: Bearer) -> poem::Result<UserRow> {
    let principal = principal(req)?;
    let state = req
        .data::<AppState>()
        .ok_or_else(|| AppError::internal("application state missing"))?;
    Ok(admin::require_admin(state, &principal).await?)
}

impl TokenAuth {
    pub fn user_id(&self) -> &str {
        self.0.user_id()
    }
}

impl NativeAuth {
    pub fn user_id(&self) -> &str {
        self.0.user_id()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::services::allowlist::PERSONAL_TOKEN_ALLOWLIST;

    /// `(METHOD, /path/{param})` of every handler in `src/api` taking `scheme`, read from
    /// the `#[OpenApi(prefix_path)]` and `#[oai(path, method)]` attributes.
    fn operations_taking(scheme: &str) -> BTreeSet<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
        let mut files = vec![];
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            } else {
                files.push(path);
            }
        }
        let quoted = |s: &str, key: &str| -> Option<String> {
            let at = s.find(&format!("{key} = \""))? + key.len() + 4;
            Some(s[at..at + s[at..].find('"')?].to_owned())
        };
        let mut found = BTreeSet::new();
        for file in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        {
            let text = std::fs::read_to_string(file).unwrap();
            let (mut prefix, mut current) = (String::new(), None);
            // Attributes and parameters in source order: each `<name>: <scheme>`
            // parameter belongs to the operation whose attribute came last.
            for piece in text.split("#[").skip(1) {
                if piece.starts_with("OpenApi(") {
                    prefix = quoted(piece, "prefix_path").unwrap_or_default();
                } else if piece.starts_with("oai(") {
                    if let (Some(path), Some(method)) =
                        (quoted(piece, "path"), quoted(piece, "method"))
                    {
                        let path = if path == "/" { String::new() } else { path };
                        let path = path
                            .split('/')
                            .map(|s| match s.strip_prefix(':') {
                                Some(p) => format!("{{{p}}}"),
                                None => s.to_owned(),
                            })
                            .collect::<Vec<_>>()
                            .join("/");
                        current = Some((method.to_ascii_uppercase(), format!("{prefix}{path}")));
                    }
                }
                let param = format!(": {scheme}");
                let takes = piece.match_indices(&param).any(|(at, _)| {
                    !piece[at + param.len()..].starts_with(|c: char| c.is_alphanumeric())
                });
                if takes {
                    found.insert(
                        current
                            .clone()
                            .expect("an auth parameter after an operation"),
                    );
                }
            }
        }
        found
    }

    #[test]
    fn token_auth_is_taken_by_exactly_the_allowlisted_operations() {
        let allowlisted: BTreeSet<(String, String)> = PERSONAL_TOKEN_ALLOWLIST
            .iter()
            .map(|r| (r.method.to_owned(), r.path.to_owned()))
            .collect();
        assert_eq!(operations_taking("TokenAuth"), allowlisted);
        let native = operations_taking("NativeAuth");
        assert!(native.len() > 40, "{native:?}");
        assert!(native.is_disjoint(&allowlisted));
    }

    #[test]
    fn every_operation_of_the_document_is_public_or_takes_a_scheme() {
        let spec = crate::api::spec_json();
        let table = crate::api::routes::route_table();
        let mut secured = operations_taking("TokenAuth");
        secured.extend(operations_taking("NativeAuth"));
        secured.extend(operations_taking("AdminAuth"));
        for (method, path) in table.operations() {
            let op = &spec["paths"][path][method.to_ascii_lowercase()];
            let declared = op["security"].as_array().is_some_and(|s| !s.is_empty());
            let takes = secured.contains(&(method.to_owned(), path.to_owned()));
            assert_eq!(declared, takes, "{method} {path}");
            assert_eq!(table.is_public(path), !declared, "{method} {path}");
        }
    }
}
