//! Web Push for browsers: the VAPID key (made once, sealed), the users' subscriptions and
//! their preview setting. What is pushed and when: [`levels`] (the rules, shared with
//! APNs) and [`dispatch`] (the sender).
//!
//! - A subscription's endpoint is a capability (whoever knows it can push to the browser):
//!   it and the browser's keys are sealed under the user's data key, found again through a
//!   blind index, and never returned; lists show the endpoint's origin only.
//! - At most [`MAX_SUBSCRIPTIONS`] per user; registering an endpoint again answers the same
//!   id (and takes the keys given, as browsers may rotate them).

pub mod dispatch;
pub mod email;
pub mod levels;
pub mod payload;
pub mod queue;

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::scheduled::{now_ms, parse_id};
use super::users;
use crate::clients::webpush::{ece, VapidKey, WebPushClient, WebPushError};
use crate::config::Config;
use crate::crypto::{Aad, DataKey, MasterKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::push_subscriptions::{self as store, SubscriptionRow};
use crate::store::Conn;

/// Subscriptions a user may have at most.
pub const MAX_SUBSCRIPTIONS: i64 = 10;
const INDEX_DOMAIN: &str = "push-endpoint";
const VAPID_SECRET: &str = "vapid";

/// The Web Push client and the VAPID key, loaded (or made) at its first use.
pub struct WebPush {
    pub client: WebPushClient,
    key: tokio::sync::OnceCell<Arc<VapidKey>>,
    pub(crate) queue: queue::Queue,
    /// Mail threads already pushed (user/thread), so a thread's later changes do not push.
    pub(crate) pushed_threads: moka::sync::Cache<String, ()>,
}

/// Builds the Web Push client from `[push]` (its defaults without the section).
pub fn build_client(config: &Config) -> Result<WebPush, String> {
    let push = config.push.clone().unwrap_or_default();
    let contact = push.contact.clone().or_else(|| {
        config
            .server
            .base_url
            .as_deref()
            .filter(|u| u.starts_with("https://"))
            .map(str::to_owned)
            .or_else(|| {
                config
                    .auth
                    .admin_emails
                    .first()
                    .map(|e| format!("mailto:{e}"))
            })
    });
    Ok(WebPush {
        client: WebPushClient::new(push.allow_private_endpoints, contact, push.timeout.0)?,
        key: tokio::sync::OnceCell::new(),
        queue: queue::Queue::new(),
        pushed_threads: email::seen_threads(),
    })
}

/// The server's VAPID key: made once, stored sealed under a key derived from the master
/// key, then kept in memory.
pub async fn vapid(state: &Context) -> AppResult<Arc<VapidKey>> {
    state
        .web_push
        .key
        .get_or_try_init(|| async {
            let master = state.master.clone();
            let der = state
                .db(move |c| {
                    let fresh = VapidKey::generate_pkcs8().map_err(AppError::Internal)?;
                    let sealed = master.seal_server_secret(VAPID_SECRET, &fresh);
                    let stored = store::secret_get_or_insert(c, VAPID_SECRET, &sealed, now_ms())?;
                    master
                        .open_server_secret(VAPID_SECRET, &stored)
                        .map_err(|e| {
                            AppError::Internal(format!("the VAPID key does not open: {e}"))
                        })
                })
                .await?;
            VapidKey::from_pkcs8(&der)
                .map(Arc::new)
                .map_err(AppError::Internal)
        })
        .await
        .cloned()
}

/// The browser's keys of a subscription, as sealed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Keys {
    pub p256dh: String,
    pub auth: String,
}

fn aad<'a>(column: &'a str, id: &'a str) -> Aad<'a> {
    Aad::new("push_subscriptions", column, id)
}

fn decode_key(field: &str, value: &str) -> AppResult<Vec<u8>> {
    let v = value.trim().trim_end_matches('=');
    if v.len() > 200 {
        return Err(AppError::invalid(field, "is too long"));
    }
    URL_SAFE_NO_PAD
        .decode(v)
        .map_err(|_| AppError::invalid(field, "must be base64url"))
}

/// `POST /api/push/subscriptions`: returns `(id, created)`.
pub async fn subscribe(
    state: &Context,
    user_id: &str,
    endpoint: &str,
    keys: Keys,
) -> AppResult<(String, bool)> {
    let url = state
        .web_push
        .client
        .parse_endpoint(endpoint.trim())
        .map_err(|m| AppError::invalid("endpoint", m))?;
    let p256dh = decode_key("keys.p256dh", &keys.p256dh)?;
    let auth = decode_key("keys.auth", &keys.auth)?;
    ece::check_keys(&p256dh, &auth).map_err(|e| match e {
        ece::EceError::BadAuthSecret => AppError::invalid("keys.auth", "must be 16 bytes"),
        _ => AppError::invalid("keys.p256dh", "must be an uncompressed P-256 public key"),
    })?;
    check_host(state, &url).await?;
    let endpoint = url.to_string();
    let new = NewSubscription {
        origin: url.origin().ascii_serialization(),
        index: state.master.blind_index(INDEX_DOMAIN, &endpoint),
        keys_json: serde_json::to_string(&Keys {
            p256dh: URL_SAFE_NO_PAD.encode(&p256dh),
            auth: URL_SAFE_NO_PAD.encode(&auth),
        })
        .map_err(|e| AppError::Internal(e.to_string()))?,
        endpoint,
    };
    let (uid, master) = (user_id.to_owned(), state.master.clone());
    state
        .db(move |c| store_subscription(c, &master, &uid, new))
        .await
}

/// 400 naming `endpoint` unless its host is a push service this server allows.
async fn check_host(state: &Context, url: &Url) -> AppResult<()> {
    state
        .web_push
        .client
        .check_host(url)
        .await
        .map_err(|e| match e {
            WebPushError::Retry { .. } => {
                AppError::invalid("endpoint", "the host does not resolve")
            }
            _ => AppError::bad_request(
                ErrorCode::PushEndpointNotAllowed,
                format!(
                    "endpoint: {} is not allowed as a push service on this server",
                    url.host_str().unwrap_or_default()
                ),
            ),
        })
}

/// A subscription to store: the endpoint, its origin and blind index, its keys as JSON.
struct NewSubscription {
    endpoint: String,
    origin: String,
    index: Vec<u8>,
    keys_json: String,
}

/// The same endpoint again replaces its keys (`(id, false)`); a new one is stored sealed
/// (`(id, true)`), at most [`MAX_SUBSCRIPTIONS`] per user.
fn store_subscription(
    c: &mut Conn,
    master: &MasterKey,
    uid: &str,
    new: NewSubscription,
) -> AppResult<(String, bool)> {
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let user = crate::services::users::load_row(&tx, uid)?;
    let dek = users::data_key(master, &user)?;
    if let Some(existing) = store::find_by_index(&tx, uid, &new.index)? {
        let sealed = dek.seal_str(&new.keys_json, &aad("keys", &existing.id));
        store::update_keys(&tx, &existing.id, &sealed)?;
        tx.commit()?;
        return Ok((existing.id, false));
    }
    if store::count_for_user(&tx, uid)? >= MAX_SUBSCRIPTIONS {
        return Err(AppError::bad_request(
            ErrorCode::TooManyPushSubscriptions,
            format!("at most {MAX_SUBSCRIPTIONS} push subscriptions per user; remove one first"),
        ));
    }
    let id = uuid::Uuid::new_v4().to_string();
    let row = SubscriptionRow {
        endpoint_enc: dek.seal_str(&new.endpoint, &aad("endpoint", &id)),
        keys_enc: dek.seal_str(&new.keys_json, &aad("keys", &id)),
        id: id.clone(),
        user_id: uid.to_owned(),
        endpoint_index: new.index,
        endpoint_origin: new.origin,
        created_at: now_ms(),
        last_success_at: None,
        failures: 0,
    };
    store::insert(&tx, &row)?;
    tx.commit()?;
    Ok((id, true))
}

pub async fn list(state: &Context, user_id: &str) -> AppResult<Vec<SubscriptionRow>> {
    let uid = user_id.to_owned();
    state.db(move |c| Ok(store::list(c, &uid)?)).await
}

pub async fn unsubscribe(state: &Context, user_id: &str, id: &str) -> AppResult<()> {
    let id = parse_id("id", id)?;
    let uid = user_id.to_owned();
    let n = state.db(move |c| Ok(store::delete(c, &uid, &id)?)).await?;
    if n == 0 {
        return Err(AppError::not_found("push subscription"));
    }
    Ok(())
}

/// `PUT /api/push/settings`.
pub async fn set_previews(state: &Context, user_id: &str, on: bool) -> AppResult<()> {
    let uid = user_id.to_owned();
    state
        .db(move |c| Ok(store::set_previews(c, &uid, on)?))
        .await
        .map(drop)
}

pub async fn previews(state: &Context, user_id: &str) -> AppResult<bool> {
    let uid = user_id.to_owned();
    state
        .db(move |c| Ok(store::previews(c, &uid)?.unwrap_or(true)))
        .await
}

/// A subscription opened for sending.
pub(crate) struct Opened {
    pub id: String,
    pub endpoint: String,
    pub p256dh: Vec<u8>,
    pub auth: Vec<u8>,
}

pub(crate) fn open(dek: &DataKey, row: &SubscriptionRow) -> Option<Opened> {
    let endpoint = dek
        .open_string(&row.endpoint_enc, &aad("endpoint", &row.id))
        .ok()?;
    let keys: Keys =
        serde_json::from_str(&dek.open_string(&row.keys_enc, &aad("keys", &row.id)).ok()?).ok()?;
    Some(Opened {
        id: row.id.clone(),
        endpoint,
        p256dh: URL_SAFE_NO_PAD.decode(keys.p256dh).ok()?,
        auth: URL_SAFE_NO_PAD.decode(keys.auth).ok()?,
    })
}

/// Re-seals every subscription of `user_id` from `old` to `new` (key deletion replaces the
/// data key; notifications must keep working). Ones that do not open are left as they are.
pub fn reseal(
    conn: &rusqlite::Connection,
    user_id: &str,
    old: &DataKey,
    new: &DataKey,
) -> rusqlite::Result<()> {
    for row in store::list(conn, user_id)? {
        let endpoint = old.open(&row.endpoint_enc, &aad("endpoint", &row.id));
        let keys = old.open(&row.keys_enc, &aad("keys", &row.id));
        if let (Ok(e), Ok(k)) = (endpoint, keys) {
            store::reseal(
                conn,
                &row.id,
                &new.seal(&e, &aad("endpoint", &row.id)),
                &new.seal(&k, &aad("keys", &row.id)),
            )?;
        }
    }
    Ok(())
}
