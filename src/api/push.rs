//! `/api/push/*`: Web Push for browsers: the server's VAPID key, the caller's push
//! subscriptions and whether pushes show previews. Native sessions only (personal API
//! tokens get 403 `forbidden_for_api_token`): a browser subscribes itself.

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::security::NativeAuth;
use super::ApiTags;
use crate::error::AppError;
use crate::services::push::{self, Keys};
use crate::services::scheduled::to_time;
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct VapidKeyView {
    /// The server's VAPID (RFC 8292) P-256 public key: the uncompressed point, base64url
    /// without padding. Pass it as `applicationServerKey` to `pushManager.subscribe`.
    pub public_key: String,
}

#[derive(Debug, Object)]
pub struct SubscriptionKeys {
    /// The browser's P-256 public key (`getKey("p256dh")`), base64url.
    pub p256dh: String,
    /// The browser's 16-byte authentication secret (`getKey("auth")`), base64url.
    pub auth: String,
}

#[derive(Debug, Object)]
pub struct SubscribeRequest {
    /// The push service URL of the subscription (`PushSubscription.endpoint`): `https`,
    /// at most 2048 characters, on a public address (private ones only where the operator
    /// allows them with `[push] allow_private_endpoints`).
    pub endpoint: String,
    pub keys: SubscriptionKeys,
}

#[derive(Debug, Object)]
pub struct SubscriptionId {
    /// UUID of the subscription.
    pub id: String,
}

#[derive(ApiResponse)]
pub enum SubscribeResponse {
    /// The endpoint was registered already: the same id (its keys were replaced).
    #[oai(status = 200)]
    Existing(Json<SubscriptionId>),
    /// A new subscription.
    #[oai(status = 201)]
    Created(Json<SubscriptionId>),
}

#[derive(Debug, Object)]
#[oai(rename = "PushSubscription", rename_all = "camelCase")]
pub struct SubscriptionView {
    pub id: String,
    /// Scheme, host and port of the endpoint (its path is a secret of the browser and is
    /// never returned), e.g. `https://fcm.googleapis.com`.
    pub endpoint_origin: String,
    pub created_at: DateTime<Utc>,
    /// The last push the push service accepted; null before the first.
    pub last_success_at: Option<DateTime<Utc>>,
    /// Pushes given up on since the last success (refused, or retries spent).
    pub failures: i64,
}

#[derive(Debug, Object)]
pub struct SubscriptionList {
    /// Oldest first.
    pub subscriptions: Vec<SubscriptionView>,
}

#[derive(ApiResponse)]
pub enum Deleted {
    /// The subscription was removed.
    #[oai(status = 204)]
    NoContent,
}

#[derive(Debug, Object)]
pub struct PushSettings {
    /// Whether pushes carry the chat's name and the message (sender and text cut to 200
    /// characters). `false`: every push says "Switchboard" / "New message" (or "New
    /// email"), so the push service and the lock screen see nothing of it. Default true.
    pub previews: bool,
}

pub struct PushApi;

#[OpenApi(prefix_path = "/api/push", tag = "ApiTags::Push")]
impl PushApi {
    /// Get the VAPID public key
    ///
    /// The key browsers subscribe with; made once and kept sealed on the server.
    #[oai(path = "/vapid", method = "get", operation_id = "push_vapid")]
    async fn vapid(
        &self,
        state: Data<&AppState>,
        _auth: NativeAuth,
    ) -> Result<Json<VapidKeyView>, AppError> {
        let key = push::vapid(&state).await?;
        Ok(Json(VapidKeyView {
            public_key: key.public_b64(),
        }))
    }

    /// Register a push subscription
    ///
    /// Registers a browser's `PushSubscription` (its JSON form). From then on each new
    /// incoming message of a chat whose level lets it through, and each new mail thread in
    /// an inbox, is pushed to it: RFC 8030 with the payload encrypted for the browser
    /// (RFC 8291 `aes128gcm`) and signed with the VAPID key (RFC 8292). The payload is the
    /// JSON `{type: "message" | "email", roomId, eventId (messages), accountId, threadId
    /// (mail), title, body, unread}`, at most 3 KiB. A subscription the push service
    /// reports gone (404, 410) is removed.
    ///
    /// 201 with a new id; 200 with the same id when the endpoint is registered already.
    /// 400 `invalid_request` naming the field (`endpoint`, `keys.p256dh`, `keys.auth`),
    /// 400 `push_endpoint_not_allowed` for a host on a private address the operator has
    /// not allowed, 400 `too_many_push_subscriptions` past 10 per user.
    #[oai(
        path = "/subscriptions",
        method = "post",
        operation_id = "push_subscribe"
    )]
    async fn subscribe(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<SubscribeRequest>,
    ) -> Result<SubscribeResponse, AppError> {
        let b = body.0;
        let keys = Keys {
            p256dh: b.keys.p256dh,
            auth: b.keys.auth,
        };
        let (id, created) = push::subscribe(&state, auth.user_id(), &b.endpoint, keys).await?;
        let body = Json(SubscriptionId { id });
        Ok(if created {
            SubscribeResponse::Created(body)
        } else {
            SubscribeResponse::Existing(body)
        })
    }

    /// List push subscriptions
    ///
    /// The caller's subscriptions (the devices that get pushes), with the last delivery
    /// the push service accepted.
    #[oai(
        path = "/subscriptions",
        method = "get",
        operation_id = "push_subscriptions"
    )]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<SubscriptionList>, AppError> {
        let rows = push::list(&state, auth.user_id()).await?;
        Ok(Json(SubscriptionList {
            subscriptions: rows
                .into_iter()
                .map(|r| SubscriptionView {
                    id: r.id,
                    endpoint_origin: r.endpoint_origin,
                    created_at: to_time(r.created_at),
                    last_success_at: r.last_success_at.map(to_time),
                    failures: r.failures,
                })
                .collect(),
        }))
    }

    /// Remove a push subscription
    ///
    /// 204; 404 when it is not a subscription of the caller.
    #[oai(
        path = "/subscriptions/:id",
        method = "delete",
        operation_id = "push_unsubscribe"
    )]
    async fn unsubscribe(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Subscription id (UUID).
        id: Path<String>,
    ) -> Result<Deleted, AppError> {
        push::unsubscribe(&state, auth.user_id(), &id).await?;
        Ok(Deleted::NoContent)
    }

    /// Get the push settings
    #[oai(path = "/settings", method = "get", operation_id = "push_settings")]
    async fn settings(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<PushSettings>, AppError> {
        let previews = push::previews(&state, auth.user_id()).await?;
        Ok(Json(PushSettings { previews }))
    }

    /// Set the push settings
    ///
    /// `previews`: whether pushes show the chat and the message (see the object). Applies
    /// to every subscription of the caller.
    #[oai(path = "/settings", method = "put", operation_id = "push_settings_set")]
    async fn set_settings(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<PushSettings>,
    ) -> Result<Json<PushSettings>, AppError> {
        push::set_previews(&state, auth.user_id(), body.0.previews).await?;
        Ok(Json(PushSettings {
            previews: body.0.previews,
        }))
    }
}
