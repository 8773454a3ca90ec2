//! `/api/admin/*`: operator endpoints. Every handler takes an `AdminAuth`
//! (`api/security.rs`), whose checker is the one place administrators are told apart; the
//! logic is shared with `switchboard user …` in `services::admin`.

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use super::security::AdminAuth;
use super::views::UserProfile;
use super::ApiTags;
use crate::error::AppError;
use crate::services::admin::{self, SubscriptionChange};
use crate::state::AppState;

/// Offset/limit pagination.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct Pagination {
    /// Number of items in the whole collection.
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
    /// Whether items follow this page (`offset + returned < total`).
    pub has_more: bool,
}

#[derive(Debug, Object)]
pub struct UserList {
    /// Users, oldest first: each the same object the user gets from `/api/auth/me`.
    pub users: Vec<UserProfile>,
    pub pagination: Pagination,
}

#[derive(Debug, Object)]
pub struct SubscriptionRequest {
    /// `true` activates personal tokens of the user, `false` lapses the subscription:
    /// every personal-token request of the user then answers 403 `subscription_expired`.
    pub active: bool,
    /// With `active: true` only: end of the subscription, an RFC 3339 date-time (or
    /// `YYYY-MM-DD`, meaning the end of that day UTC) in the future. Omit for no end date.
    pub until: Option<String>,
}

pub struct AdminApi;

#[OpenApi(prefix_path = "/api/admin", tag = "ApiTags::Admin")]
impl AdminApi {
    /// List users
    ///
    /// Administrators only (403 `admin_required` for other users; 403
    /// `forbidden_for_api_token` for personal tokens). Users oldest first, with
    /// offset/limit pagination: `limit` 1 to 100 (default 50), `offset` at least 0
    /// (default 0); values outside are 400 `invalid_request`, not clamped.
    #[oai(path = "/users", method = "get", operation_id = "admin_list_users")]
    async fn list_users(
        &self,
        state: Data<&AppState>,
        _admin: AdminAuth,
        /// Page size, 1 to 100 (default 50).
        limit: Query<Option<i64>>,
        /// Users to skip, at least 0 (default 0).
        offset: Query<Option<i64>>,
    ) -> Result<Json<UserList>, AppError> {
        let page = admin::list_users(&state, limit.0, offset.0).await?;
        let has_more = page.has_more();
        Ok(Json(UserList {
            pagination: Pagination {
                total: page.total,
                limit: page.limit,
                offset: page.offset,
                has_more,
            },
            users: page.users.into_iter().map(UserProfile::from).collect(),
        }))
    }

    /// Show a user
    ///
    /// Administrators only. 404 for an unknown id.
    #[oai(path = "/users/:id", method = "get", operation_id = "admin_get_user")]
    async fn get_user(
        &self,
        state: Data<&AppState>,
        _admin: AdminAuth,
        /// User id (UUID).
        id: Path<String>,
    ) -> Result<Json<UserProfile>, AppError> {
        Ok(Json(admin::show_user(&state, &id.0).await?.into()))
    }

    /// Set a user's subscription
    ///
    /// Administrators only. Sets the personal-token tier of the user; it takes effect on the
    /// user's very next personal-token request, with no grace period: `{"active": true,
    /// "until": "<RFC 3339>"}` is active until that time (which must be in the future),
    /// `{"active": true}` is active with no end date, `{"active": false}` lapses the
    /// subscription (every personal-token request of the user then answers 403
    /// `subscription_expired`; renewing re-enables all the user's tokens at once). The same
    /// as `switchboard user subscription`. Returns the user. 400 `invalid_request` for a
    /// bad or past `until`, or `until` with `active: false`; 404 for an unknown id.
    #[oai(
        path = "/users/:id/subscription",
        method = "put",
        operation_id = "admin_set_subscription"
    )]
    async fn set_subscription(
        &self,
        state: Data<&AppState>,
        _admin: AdminAuth,
        /// User id (UUID).
        id: Path<String>,
        body: Json<SubscriptionRequest>,
    ) -> Result<Json<UserProfile>, AppError> {
        let change = SubscriptionChange::from_request(body.active, body.until.as_deref())?;
        let row = admin::set_user_subscription(&state, &id.0, change).await?;
        let profile = crate::services::users::profile_of(&state.master, row)?;
        Ok(Json(profile.into()))
    }

    /// Make a user an administrator
    ///
    /// Administrators only. The user becomes an administrator at once (its current sessions
    /// pass the admin check from their next request), the same as `switchboard user
    /// promote`. There is no demotion over the API: an administrator who should not be one
    /// is demoted by the operator (`admin_emails` and the CLI). Returns the user; 404 for
    /// an unknown id.
    #[oai(
        path = "/users/:id/promote",
        method = "post",
        operation_id = "admin_promote_user"
    )]
    async fn promote_user(
        &self,
        state: Data<&AppState>,
        _admin: AdminAuth,
        /// User id (UUID).
        id: Path<String>,
    ) -> Result<Json<UserProfile>, AppError> {
        let row = admin::promote_by_id(&state, &id.0).await?;
        let profile = crate::services::users::profile_of(&state.master, row)?;
        Ok(Json(profile.into()))
    }
}
