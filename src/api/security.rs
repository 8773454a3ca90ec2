//! Bearer security schemes. Obtaining a [`BearerAuth`] IS the authentication check: the
//! gate has already verified the token and stored the [`Principal`]; the scheme hands it
//! to the handler and documents the requirement in the OpenAPI document.

use poem::Request;
use poem_openapi::auth::Bearer;
use poem_openapi::SecurityScheme;

use crate::error::AppError;
use crate::services::session::Principal;

/// `Authorization: Bearer <token>`: a JWT access token from `/api/auth/verify`, or a
/// personal API token (`csk_…`, 52 characters) on the routes that allow them.
#[derive(SecurityScheme)]
#[oai(
    rename = "bearerAuth",
    ty = "bearer",
    bearer_format = "JWT or csk_ personal token",
    checker = "principal_of"
)]
pub struct BearerAuth(pub Principal);

async fn principal_of(req: &Request, _bearer: Bearer) -> poem::Result<Principal> {
    req.extensions()
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| AppError::unauthorized("authentication required").into())
}

impl BearerAuth {
    pub fn user_id(&self) -> &str {
        self.0.user_id()
    }
}
