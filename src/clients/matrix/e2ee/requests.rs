//! The homeserver side of the `OlmMachine`: its outgoing requests (keys upload, query and
//! claim, to-device messages, signature uploads) sent with the Matrix client's reqwest
//! client, and their answers parsed into the ruma responses the machine expects.

use std::time::Duration;

use matrix_sdk_crypto::types::requests::{AnyOutgoingRequest, ToDeviceRequest};
use ruma::api::client::keys::{claim_keys, get_keys, upload_keys, upload_signatures};
use ruma::api::client::message::send_message_event;
use ruma::api::client::to_device::send_event_to_device;
use ruma::api::IncomingResponse;
use ruma::events::MessageLikeEventContent;
use serde_json::{json, Value};

use super::{E2eeError, UserCrypto};
use crate::clients::matrix::{decode, encode, http_error, unreachable, MatrixClient, MatrixError};

/// How long the homeserver may wait for remote servers on key queries and claims.
const REMOTE_TIMEOUT: Duration = Duration::from_secs(10);

/// The raw calls the machine's requests need (next to the typed ones in `matrix/mod.rs`).
impl MatrixClient {
    /// A client-API call with a JSON body (none for `GET`): the status and body of a
    /// success, the Matrix error otherwise. For callers that parse answers themselves.
    pub(super) async fn call_json(
        &self,
        method: reqwest::Method,
        token: &str,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<(u16, Vec<u8>), MatrixError> {
        let mut req = self.client_api(method.clone(), token, path)?;
        if method != reqwest::Method::GET {
            req = req.json(body);
        }
        let resp = req.send().await.map_err(unreachable)?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(unreachable)?;
        if !status.is_success() {
            return Err(http_error(status.as_u16(), &bytes));
        }
        Ok((status.as_u16(), bytes.to_vec()))
    }

    /// A client-API `GET` answered with JSON.
    pub(super) async fn get_json(
        &self,
        token: &str,
        path: &str,
    ) -> Result<serde_json::Value, MatrixError> {
        let resp = self
            .client_api(reqwest::Method::GET, token, path)?
            .send()
            .await
            .map_err(unreachable)?;
        decode(resp).await
    }
}

/// Sends `body` to `/_matrix/client/v3/{path}` and parses the answer as ruma's `R`.
pub(super) async fn call<R: IncomingResponse>(
    matrix: &MatrixClient,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: &Value,
) -> Result<R, E2eeError> {
    let (status, bytes) = matrix.call_json(method, token, path, body).await?;
    let resp = http::Response::builder()
        .status(status)
        .body(bytes)
        .map_err(|e| MatrixError::Decode(e.to_string()))?;
    R::try_from_http_response(resp).map_err(|e| MatrixError::Decode(e.to_string()).into())
}

impl UserCrypto {
    /// `POST keys/signatures/upload` of signatures the machine made (cross-signing,
    /// a verified device, outgoing requests).
    pub(super) async fn upload_signatures(
        &self,
        matrix: &MatrixClient,
        request: &upload_signatures::v3::Request,
    ) -> Result<upload_signatures::v3::Response, E2eeError> {
        let body = serde_json::to_value(&request.signed_keys).map_err(E2eeError::crypto)?;
        self.call(
            matrix,
            reqwest::Method::POST,
            "keys/signatures/upload",
            &body,
        )
        .await
    }

    /// Sends every request the machine has queued and reports each answer back. Serialised
    /// per user: the machine hands out the same request again until it is marked sent. A
    /// failed request is logged and stays queued for the next call.
    pub async fn process_outgoing(&self, matrix: &MatrixClient) -> Result<(), E2eeError> {
        let _guard = self.requests_lock.lock().await;
        let requests = self
            .machine
            .outgoing_requests()
            .await
            .map_err(E2eeError::store)?;
        if !requests.is_empty() {
            // Their answers change the machine: the next sync response is fed in full.
            self.leave_rest();
        }
        for request in requests {
            let id = request.request_id();
            let sent = match request.request() {
                AnyOutgoingRequest::KeysUpload(r) => self.keys_upload(matrix, id, r).await,
                AnyOutgoingRequest::KeysQuery(r) => self.keys_query(matrix, id, r).await,
                AnyOutgoingRequest::KeysClaim(r) => self.keys_claim(matrix, id, r).await,
                AnyOutgoingRequest::ToDeviceRequest(r) => self.to_device(matrix, r).await,
                AnyOutgoingRequest::SignatureUpload(r) => {
                    let resp = self.upload_signatures(matrix, r).await?;
                    self.mark_sent(id, &resp).await
                }
                AnyOutgoingRequest::RoomMessage(r) => {
                    let path = format!(
                        "rooms/{}/send/{}/{}",
                        encode(r.room_id.as_str()),
                        encode(&r.content.event_type().to_string()),
                        encode(r.txn_id.as_str())
                    );
                    let body = serde_json::to_value(&r.content).unwrap_or_default();
                    let resp: send_message_event::v3::Response = self
                        .call(matrix, reqwest::Method::PUT, &path, &body)
                        .await?;
                    self.mark_sent(id, &resp).await
                }
            };
            if let Err(e) = sent {
                tracing::warn!(user_id = %self.user_id, error = %e, "end-to-end encryption request failed; retried later");
            }
        }
        // Room keys that arrived go to the key backup (a failure is retried next time).
        if let Err(e) = self.upload_backup(matrix).await {
            tracing::warn!(user_id = %self.user_id, error = %e, "key backup upload failed; retried later");
        }
        Ok(())
    }

    /// `POST keys/query` for a request of the machine; the answer goes back to it.
    pub(super) async fn keys_query(
        &self,
        matrix: &MatrixClient,
        id: &ruma::TransactionId,
        r: &matrix_sdk_crypto::types::requests::KeysQueryRequest,
    ) -> Result<(), E2eeError> {
        let body = json!({
            "device_keys": r.device_keys,
            "timeout": r.timeout.unwrap_or(REMOTE_TIMEOUT).as_millis() as u64,
        });
        let resp: get_keys::v3::Response = self
            .call(matrix, reqwest::Method::POST, "keys/query", &body)
            .await?;
        self.mark_sent(id, &resp).await
    }

    /// Queries the own account's device keys now, outside the machine's queue: a device
    /// that just started a verification is then known without waiting for the next sync.
    pub(super) async fn query_own_keys(&self, matrix: &MatrixClient) -> Result<(), E2eeError> {
        let (id, r) = self.machine.query_keys_for_users([self.machine.user_id()]);
        self.keys_query(matrix, &id, &r).await
    }

    pub(super) async fn call<R: IncomingResponse>(
        &self,
        matrix: &MatrixClient,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> Result<R, E2eeError> {
        call(matrix, &self.token(), method, path, body).await
    }

    pub(super) async fn mark_sent<'a>(
        &self,
        id: &ruma::TransactionId,
        resp: impl Into<matrix_sdk_crypto::types::requests::AnyIncomingResponse<'a>>,
    ) -> Result<(), E2eeError> {
        self.machine
            .mark_request_as_sent(id, resp)
            .await
            .map_err(E2eeError::crypto)
    }

    pub(super) async fn keys_upload(
        &self,
        matrix: &MatrixClient,
        id: &ruma::TransactionId,
        r: &upload_keys::v3::Request,
    ) -> Result<(), E2eeError> {
        let mut body = json!({});
        if let Some(keys) = &r.device_keys {
            body["device_keys"] = serde_json::to_value(keys).unwrap_or_default();
        }
        if !r.one_time_keys.is_empty() {
            body["one_time_keys"] = serde_json::to_value(&r.one_time_keys).unwrap_or_default();
        }
        if !r.fallback_keys.is_empty() {
            body["fallback_keys"] = serde_json::to_value(&r.fallback_keys).unwrap_or_default();
        }
        let resp: upload_keys::v3::Response = self
            .call(matrix, reqwest::Method::POST, "keys/upload", &body)
            .await?;
        self.mark_sent(id, &resp).await
    }

    /// `/keys/claim`: one-time keys for devices without an Olm session with ours.
    pub(super) async fn keys_claim(
        &self,
        matrix: &MatrixClient,
        id: &ruma::TransactionId,
        r: &claim_keys::v3::Request,
    ) -> Result<(), E2eeError> {
        let body = json!({
            "one_time_keys": r.one_time_keys,
            "timeout": r.timeout.unwrap_or(REMOTE_TIMEOUT).as_millis() as u64,
        });
        let resp: claim_keys::v3::Response = self
            .call(matrix, reqwest::Method::POST, "keys/claim", &body)
            .await?;
        self.mark_sent(id, &resp).await
    }

    /// `PUT /sendToDevice/{type}/{txnId}` (room keys, key requests and answers).
    pub(super) async fn to_device(
        &self,
        matrix: &MatrixClient,
        r: &ToDeviceRequest,
    ) -> Result<(), E2eeError> {
        let path = format!(
            "sendToDevice/{}/{}",
            encode(&r.event_type.to_string()),
            encode(r.txn_id.as_str())
        );
        let body = json!({ "messages": r.messages });
        let resp: send_event_to_device::v3::Response = self
            .call(matrix, reqwest::Method::PUT, &path, &body)
            .await?;
        self.mark_sent(&r.txn_id, &resp).await
    }
}
