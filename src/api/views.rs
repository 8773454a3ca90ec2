//! API objects shared by several tags, and their conversions from domain types.

use chrono::{DateTime, Utc};
use poem_openapi::Object;

use crate::services::users::Profile;

/// A plain confirmation.
#[derive(Debug, Object)]
pub struct MessageResponse {
    pub message: String,
}

impl MessageResponse {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Personal-token subscription of a user.
#[derive(Debug, Object)]
pub struct SubscriptionInfo {
    /// Whether personal API tokens of this user work now.
    pub active: bool,
    /// End of the subscription; null when it has no end date (or is lapsed).
    pub until: Option<DateTime<Utc>>,
}

/// A user: the signed-in user's own profile (`/api/auth/me`, sign-up, sign-in), and the same
/// object for any user under `/api/admin/users`. Everything in it is shown to the user and to
/// administrators alike; nothing secret or sealed-for-the-user-only (keys, token hashes,
/// wrapped keys) is part of it.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct UserProfile {
    /// User id (UUID).
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub username: Option<String>,
    pub avatar_url: Option<String>,
    /// The user's Matrix ID on the homeserver, once created.
    pub matrix_user_id: Option<String>,
    pub is_admin: bool,
    pub onboarding_completed: bool,
    /// Personal-token subscription: `active` is whether the user's tokens work now.
    pub subscription: SubscriptionInfo,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl SubscriptionInfo {
    pub fn of(u: &crate::store::users::UserRow) -> Self {
        let now = crate::clock::unix_now() as i64;
        Self {
            active: u.subscription_is_active(now),
            until: if u.subscription_active {
                opt_time(u.subscription_until)
            } else {
                None
            },
        }
    }
}

pub fn time(secs: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(secs, 0).unwrap_or_default()
}

pub fn opt_time(secs: Option<i64>) -> Option<DateTime<Utc>> {
    secs.map(time)
}

impl From<Profile> for UserProfile {
    fn from(p: Profile) -> Self {
        let u = p.user;
        Self {
            subscription: SubscriptionInfo::of(&u),
            id: u.id,
            email: p.email,
            display_name: u.display_name,
            username: u.username,
            avatar_url: u.avatar_url,
            matrix_user_id: u.matrix_user_id,
            is_admin: u.is_admin,
            onboarding_completed: u.onboarding_completed,
            created_at: time(u.created_at),
            updated_at: time(u.updated_at),
        }
    }
}
