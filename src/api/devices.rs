//! `/api/devices*`: push-notification devices (APNs). Native sessions only (personal API
//! tokens get 403 `forbidden_for_api_token`).

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use super::security::NativeAuth;
use super::views::MessageResponse;
use super::ApiTags;
use crate::error::AppError;
use crate::services::devices::{self, Device, Registration};
use crate::services::scheduled::to_time;
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename = "Device", rename_all = "camelCase")]
pub struct DeviceView {
    /// UUID of the registration.
    pub token_id: String,
    /// Last six characters of the push token (the token itself is never returned); null
    /// when it can no longer be read (keys deleted: register the device again).
    pub token_suffix: Option<String>,
    pub device_name: Option<String>,
    pub device_model: Option<String>,
    pub os_version: Option<String>,
    pub app_version: Option<String>,
    /// `production` or `development` (the APNs environment of the token).
    pub environment: String,
    pub created_at: DateTime<Utc>,
    /// Last registration or update.
    pub updated_at: DateTime<Utc>,
    /// Last push APNs accepted for this device; null before the first.
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<Device> for DeviceView {
    fn from(d: Device) -> Self {
        let r = d.row;
        Self {
            token_id: r.id,
            token_suffix: d.token_suffix,
            device_name: r.device_name,
            device_model: r.device_model,
            os_version: r.os_version,
            app_version: r.app_version,
            environment: r.environment,
            created_at: to_time(r.created_at),
            updated_at: to_time(r.updated_at),
            last_used_at: r.last_used_at.map(to_time),
        }
    }
}

#[derive(Debug, Object)]
pub struct DeviceList {
    /// Oldest registration first.
    pub devices: Vec<DeviceView>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RegisterDeviceRequest {
    /// APNs device token: 64 to 200 hex characters (case-insensitive).
    pub token: String,
    /// At most 100 characters.
    pub device_name: Option<String>,
    /// At most 50 characters.
    pub device_model: Option<String>,
    /// At most 20 characters.
    pub os_version: Option<String>,
    /// At most 20 characters.
    pub app_version: Option<String>,
    /// `production` or `development`; default: the server's `[push] environment`
    /// (production when push is not configured).
    pub environment: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RegisterDeviceResult {
    pub message: String,
    /// UUID of the registration (the same when the token is registered again).
    pub token_id: String,
}

#[derive(Debug, Object)]
pub struct UnregisterDeviceRequest {
    /// The APNs device token to remove (64 to 200 hex characters).
    pub token: String,
}

#[derive(Debug, Object)]
#[oai(rename = "PushStatus", rename_all = "camelCase")]
pub struct PushStatusView {
    /// Whether the server has an `[push]` (APNs) configuration.
    pub configured: bool,
    /// `production` or `development`; null when not configured.
    pub environment: Option<String>,
    /// The app's bundle id (APNs topic); null when not configured.
    pub bundle_id: Option<String>,
}

pub struct DevicesApi;

#[OpenApi(prefix_path = "/api/devices", tag = "ApiTags::Devices")]
impl DevicesApi {
    /// List devices
    ///
    /// The caller's registered push devices. Push tokens are stored encrypted and never
    /// returned; `tokenSuffix` shows their last six characters.
    #[oai(path = "/", method = "get", operation_id = "devices_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<DeviceList>, AppError> {
        let list = devices::list(&state, auth.user_id()).await?;
        Ok(Json(DeviceList {
            devices: list.into_iter().map(Into::into).collect(),
        }))
    }

    /// Register a device
    ///
    /// Registers an APNs device token for pushes (due reminders, scheduled messages that
    /// failed, incoming messages of importance ≥ 0.7; pushes carry no message text).
    /// Registering a token again updates its device and returns the same `tokenId`; a
    /// token registered by another user moves to the caller. At most 50 devices per user
    /// (400 `too_many_devices`). 400 `invalid_request` for invalid fields.
    #[oai(path = "/register", method = "post", operation_id = "devices_register")]
    async fn register(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<RegisterDeviceRequest>,
    ) -> Result<Json<RegisterDeviceResult>, AppError> {
        let b = body.0;
        let token_id = devices::register(
            &state,
            auth.user_id(),
            Registration {
                token: b.token,
                device_name: b.device_name,
                device_model: b.device_model,
                os_version: b.os_version,
                app_version: b.app_version,
                environment: b.environment,
            },
        )
        .await?;
        Ok(Json(RegisterDeviceResult {
            message: "device registered".into(),
            token_id,
        }))
    }

    /// Unregister a device by token
    ///
    /// 400 for a malformed token; 404 when the caller has no device with it.
    #[oai(
        path = "/unregister",
        method = "post",
        operation_id = "devices_unregister"
    )]
    async fn unregister(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<UnregisterDeviceRequest>,
    ) -> Result<Json<MessageResponse>, AppError> {
        devices::unregister(&state, auth.user_id(), &body.token).await?;
        Ok(Json(MessageResponse::new("device unregistered")))
    }

    /// Push configuration
    ///
    /// Whether pushes are configured, and the APNs environment and bundle id. Without
    /// `[push]`: `{"configured": false, "environment": null, "bundleId": null}`.
    #[oai(path = "/status", method = "get", operation_id = "devices_status")]
    async fn status(
        &self,
        state: Data<&AppState>,
        _auth: NativeAuth,
    ) -> Result<Json<PushStatusView>, AppError> {
        let s = devices::status(&state);
        Ok(Json(PushStatusView {
            configured: s.configured,
            environment: s.environment.map(str::to_owned),
            bundle_id: s.bundle_id,
        }))
    }

    /// Remove a device
    ///
    /// 400 when `tokenId` is not a UUID; 404 when it is not a device of the caller.
    #[oai(path = "/:tokenId", method = "delete", operation_id = "devices_delete")]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Device registration id (UUID).
        #[oai(name = "tokenId")]
        token_id: Path<String>,
    ) -> Result<Json<MessageResponse>, AppError> {
        devices::delete(&state, auth.user_id(), &token_id).await?;
        Ok(Json(MessageResponse::new("device removed")))
    }

    /// Send a test push
    ///
    /// Sends "Test notification" to the device. 503 `push_not_configured` without `[push]`;
    /// 404 unknown device; 502 `push_rejected` with the APNs reason when APNs refuses it (a
    /// token APNs reports `Unregistered`/`BadDeviceToken`, or a 410, removes the device);
    /// 503 `push_unavailable` when APNs cannot be reached.
    #[oai(
        path = "/:tokenId/test",
        method = "post",
        operation_id = "devices_test"
    )]
    async fn test(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Device registration id (UUID).
        #[oai(name = "tokenId")]
        token_id: Path<String>,
    ) -> Result<Json<MessageResponse>, AppError> {
        devices::test(&state, auth.user_id(), &token_id).await?;
        Ok(Json(MessageResponse::new("test notification sent")))
    }
}
