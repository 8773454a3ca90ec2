//! Who is calling: verification of access tokens (JWT, HS256) and personal API tokens.
//!
//! The HTTP gate calls [`authenticate`] once per request; handlers receive the resulting
//! [`Principal`] through the bearer security scheme.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::clock::unix_now;
use crate::crypto;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::epoch::{EpochCache, WriteEpoch};
use crate::store::{api_tokens, users};

/// How long a verified credential is trusted without asking the database again. Any write
/// through this process (a revocation, a subscription change by an admin) ends it at once
/// (see [`crate::store::epoch`]); this bounds only writes by another process, i.e. the `switchboard user`
/// CLI, which waits this long before it returns so its change is in effect when it does.
pub const AUTH_CACHE_MAX_AGE: Duration = Duration::from_secs(1);

/// Recently verified credentials, so a request does not cost a database round trip.
pub struct AuthCache {
    /// SHA-256 (hex) of a personal token → what the database said about it.
    tokens: EpochCache<String, Arc<TokenGrant>>,
    /// Users that exist (checked for every JWT).
    users: EpochCache<String, ()>,
    /// Hashes that name no token, or a revoked one: neither can become valid again (a
    /// secret is never reissued, a revocation is final), so refusing them again costs no
    /// database round trip however often an attacker repeats them.
    refused: moka::sync::Cache<String, &'static str>,
    /// Hashes of tokens that exist. The gate lets a caller whose address has spent its
    /// budget present only these: an unknown token is refused before any lookup.
    known: moka::sync::Cache<String, ()>,
}

impl AuthCache {
    pub fn new(epoch: &WriteEpoch) -> Self {
        Self {
            tokens: EpochCache::new(epoch, 10_000, AUTH_CACHE_MAX_AGE, None),
            users: EpochCache::new(epoch, 10_000, AUTH_CACHE_MAX_AGE, None),
            refused: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(Duration::from_secs(600))
                .build(),
            known: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_idle(Duration::from_secs(3_600))
                .build(),
        }
    }
}

/// Whether `token` is a personal token this process has seen exist (no database access).
pub fn is_known_personal_token(state: &Context, token: &str) -> bool {
    state
        .auth_cache
        .known
        .contains_key(&crypto::sha256_hex(token))
}

/// A personal token that exists and is not revoked, with the time-dependent facts that are
/// re-checked on every use.
#[derive(Debug)]
struct TokenGrant {
    principal: Principal,
    expires_at: Option<i64>,
    subscription_active: bool,
    subscription_until: Option<i64>,
}

impl TokenGrant {
    fn admit(&self, now: i64) -> AppResult<Principal> {
        if self.expires_at.is_some_and(|at| at <= now) {
            return Err(AppError::unauthorized(
                "this personal API token has expired",
            ));
        }
        if !users::subscription_is_active(self.subscription_active, self.subscription_until, now) {
            return Err(AppError::forbidden(
                ErrorCode::SubscriptionExpired,
                "an active paid subscription is required to use personal API tokens",
            ));
        }
        Ok(self.principal.clone())
    }
}

const INVALID_TOKEN: &str = "invalid personal API token";
const REVOKED_TOKEN: &str = "this personal API token has been revoked";

/// Prefix that tells personal API tokens apart from JWT access tokens.
pub const PERSONAL_TOKEN_PREFIX: &str = "csk_";

/// The authenticated caller of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A native-app user holding a JWT access token. `session_id` names the sign-in the
    /// token was issued for (`None` for tokens issued before sessions were named).
    User {
        user_id: String,
        session_id: Option<String>,
    },
    /// A script holding a personal API token of `user_id`. Shared strings: a cached
    /// grant hands out this principal on every request (and the security scheme copies it
    /// again for the handler), so a copy is two reference counts, not two allocations.
    ApiToken {
        user_id: Arc<str>,
        token_id: Arc<str>,
        allowlist_version: u32,
        /// Allowlist version of the token's last explicit opt-in (0: never).
        opted_in_version: u32,
    },
}

impl Principal {
    pub fn user_id(&self) -> &str {
        match self {
            Self::User { user_id, .. } => user_id,
            Self::ApiToken { user_id, .. } => user_id,
        }
    }

    /// The session a JWT access token was issued for (`None` for personal tokens).
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Self::User { session_id, .. } => session_id.as_deref(),
            Self::ApiToken { .. } => None,
        }
    }

    pub fn is_api_token(&self) -> bool {
        matches!(self, Self::ApiToken { .. })
    }

    /// Key of this caller's general rate-limit budget: the user's, whichever credential
    /// (native session or any of the user's personal tokens) is presented, so minting
    /// more tokens buys no more requests.
    pub fn rate_key(&self) -> String {
        format!("user:{}", self.user_id())
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iat: u64,
    exp: u64,
    typ: String,
    /// The session (refresh-token row) the token was issued for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sid: Option<String>,
}

/// HS256 keys for access tokens, derived from the master key so they survive restarts.
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    ttl_secs: u64,
}

impl JwtKeys {
    pub fn new(secret: &[u8], ttl_secs: u64) -> Self {
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            ttl_secs,
        }
    }

    /// Issues an access token for `user_id`'s session `session_id`; returns it with its
    /// lifetime in seconds.
    pub fn issue(&self, user_id: &str, session_id: Option<&str>) -> AppResult<(String, u64)> {
        let now = unix_now();
        let claims = Claims {
            sub: user_id.to_owned(),
            iat: now,
            exp: now + self.ttl_secs,
            typ: "access".to_owned(),
            sid: session_id.map(str::to_owned),
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(AppError::internal)?;
        Ok((token, self.ttl_secs))
    }

    /// The user and session of a valid access token.
    fn verify(&self, token: &str) -> Option<(String, Option<String>)> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation).ok()?;
        (data.claims.typ == "access").then_some((data.claims.sub, data.claims.sid))
    }
}

/// Resolves a bearer token to its principal. Errors are the exact answers the gate gives:
/// 401 for unknown, expired or revoked credentials; 403 `subscription_expired` for a
/// personal token whose owner has no active subscription.
pub async fn authenticate(state: &Context, token: &str) -> AppResult<Principal> {
    if token.starts_with(PERSONAL_TOKEN_PREFIX) {
        return authenticate_personal(state, token).await;
    }
    let (user_id, session_id) = state
        .jwt
        .verify(token)
        .ok_or_else(|| AppError::unauthorized("invalid or expired access token"))?;
    let cached = state.auth_cache.users.get(&user_id).is_some();
    auth_cache_metric(cached);
    if !cached {
        let since = state.auth_cache.users.epoch();
        let uid = user_id.clone();
        let exists = state
            .db(move |c| Ok(users::find(c, &uid)?.is_some()))
            .await?;
        if !exists {
            return Err(AppError::unauthorized(
                "the account of this token no longer exists",
            ));
        }
        state
            .auth_cache
            .users
            .insert_for(user_id.clone(), since, &user_id, ());
    }
    Ok(Principal::User {
        user_id,
        session_id,
    })
}

/// The verdict on a personal token from the cache alone (`None`: not cached, ask
/// [`authenticate`]). The gate asks this first: a token the cache knows needs no look at
/// the caller's address budget.
pub fn authenticate_personal_cached(state: &Context, token: &str) -> Option<AppResult<Principal>> {
    cached_personal(state, &crypto::sha256_hex(token))
}

fn auth_cache_metric(hit: bool) {
    crate::metrics::global()
        .cache(crate::metrics::CacheName::Auth)
        .record(hit);
}

fn cached_personal(state: &Context, hash: &str) -> Option<AppResult<Principal>> {
    let grant = state.auth_cache.tokens.get(hash);
    auth_cache_metric(grant.is_some());
    if let Some(grant) = grant {
        return Some(grant.admit(unix_now() as i64));
    }
    let reason = state.auth_cache.refused.get(hash)?;
    Some(Err(AppError::unauthorized(reason)))
}

async fn authenticate_personal(state: &Context, token: &str) -> AppResult<Principal> {
    let hash = crypto::sha256_hex(token);
    let now = unix_now() as i64;
    if let Some(verdict) = cached_personal(state, &hash) {
        return verdict;
    }
    let since = state.auth_cache.tokens.epoch();
    let key = hash.clone();
    let found: Result<TokenGrant, &'static str> = state
        .store
        .run(move |c| -> AppResult<_> {
            let Some(row) = api_tokens::find_by_hash(c, &key)? else {
                return Ok(Err(INVALID_TOKEN));
            };
            if row.revoked_at.is_some() {
                return Ok(Err(REVOKED_TOKEN));
            }
            let user = users::find(c, &row.user_id)?
                .ok_or_else(|| AppError::unauthorized("invalid personal API token"))?;
            // Recording use costs a write: once a minute per token is precise enough.
            if row.last_used_at.is_none_or(|at| now - at >= 60) {
                crate::store::epoch::scope_to_user(&row.user_id);
                api_tokens::touch(c, &row.id, now)?;
            }
            Ok(Ok(TokenGrant {
                principal: Principal::ApiToken {
                    user_id: row.user_id.into(),
                    token_id: row.id.into(),
                    allowlist_version: row.allowlist_version,
                    opted_in_version: row.opted_in_version,
                },
                expires_at: row.expires_at,
                subscription_active: user.subscription_active,
                subscription_until: user.subscription_until,
            }))
        })
        .await?;
    let grant = match found {
        Ok(grant) => grant,
        Err(reason) => {
            state.auth_cache.refused.insert(hash, reason);
            return Err(AppError::unauthorized(reason));
        }
    };
    state.auth_cache.known.insert(hash.clone(), ());
    let grant = Arc::new(grant);
    let owner = grant.principal.user_id().to_owned();
    state
        .auth_cache
        .tokens
        .insert_for(hash, since, &owner, grant.clone());
    grant.admit(now)
}
