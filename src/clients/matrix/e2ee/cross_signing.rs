//! Cross-signing of the user's account and the sync device (docs/design.md,
//! E2EE and trust): bootstrap when the account has none (answering the homeserver's
//! user-interactive auth with the account password Switchboard derives), import of the
//! private keys into a new crypto store, and the sync device's self-signing signature.

use matrix_sdk_crypto::store::types::CrossSigningKeyExport;
use matrix_sdk_crypto::types::requests::{AnyIncomingResponse, UploadSigningKeysRequest};
use ruma::api::client::keys::{get_keys, upload_signing_keys};
use ruma::TransactionId;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{E2eeError, UserCrypto};
use crate::clients::matrix::{unreachable, MatrixClient, MatrixError};

/// The private cross-signing keys (unpadded base64 seeds), as Switchboard keeps them sealed.
#[derive(Clone, Serialize, Deserialize)]
pub struct CrossSigningSeeds {
    pub master: Option<String>,
    pub self_signing: Option<String>,
    pub user_signing: Option<String>,
}

impl std::fmt::Debug for CrossSigningSeeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CrossSigningSeeds(..)")
    }
}

/// What the homeserver and the crypto store say about the account's cross-signing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrossSigning {
    /// The homeserver lists a master key for the account.
    pub exists: bool,
    /// The crypto store holds private master and self-signing keys (the crate drops them
    /// when the homeserver lists other keys).
    pub private_keys: bool,
    /// The sync device carries a valid signature by the account's self-signing key.
    pub device_signed: bool,
}

impl UserCrypto {
    /// Asks the homeserver for the account's own keys (device and cross-signing) and
    /// feeds the answer to the machine, then reports the state.
    pub async fn cross_signing(&self, matrix: &MatrixClient) -> Result<CrossSigning, E2eeError> {
        let me = self.machine.user_id().to_owned();
        let (id, request) = self.machine.query_keys_for_users([me.as_ref()]);
        let body = json!({"device_keys": request.device_keys, "timeout": 10_000});
        let resp: get_keys::v3::Response = self
            .call(matrix, reqwest::Method::POST, "keys/query", &body)
            .await?;
        // Only what the homeserver lists counts: a bootstrap whose upload was refused
        // leaves a local identity the machine would report as well.
        let exists = resp.master_keys.contains_key(&me);
        self.mark_sent(&id, &resp).await?;
        let status = self.machine.cross_signing_status().await;
        let device_signed = match self
            .machine
            .get_device(&me, self.machine.device_id(), None)
            .await
            .map_err(E2eeError::store)?
        {
            Some(d) => d.is_cross_signed_by_owner(),
            None => false,
        };
        Ok(CrossSigning {
            exists,
            private_keys: status.has_master && status.has_self_signing,
            device_signed,
        })
    }

    /// The private cross-signing keys in the crypto store, if any.
    pub async fn export_cross_signing(&self) -> Result<Option<CrossSigningSeeds>, E2eeError> {
        let export = self
            .machine
            .export_cross_signing_keys()
            .await
            .map_err(E2eeError::store)?;
        Ok(export.map(|e| CrossSigningSeeds {
            master: e.master_key.clone(),
            self_signing: e.self_signing_key.clone(),
            user_signing: e.user_signing_key.clone(),
        }))
    }

    /// Puts kept private keys into the crypto store; fails when they are not the keys of
    /// the identity the homeserver has (cross-signing was replaced elsewhere).
    pub async fn import_cross_signing(&self, seeds: &CrossSigningSeeds) -> Result<(), E2eeError> {
        let export = CrossSigningKeyExport {
            master_key: seeds.master.clone(),
            self_signing_key: seeds.self_signing.clone(),
            user_signing_key: seeds.user_signing.clone(),
        };
        let status = self
            .machine
            .import_cross_signing_keys(export)
            .await
            .map_err(E2eeError::crypto)?;
        if !(status.has_master && status.has_self_signing) {
            return Err(E2eeError::Crypto(
                "imported cross-signing keys are incomplete".into(),
            ));
        }
        Ok(())
    }

    /// Makes new cross-signing keys (replacing existing ones when `reset`) and uploads
    /// them, answering the user-interactive auth with `password`, then the signatures
    /// (the sync device signed by the new self-signing key).
    pub async fn bootstrap_cross_signing(
        &self,
        matrix: &MatrixClient,
        password: &str,
        reset: bool,
    ) -> Result<(), E2eeError> {
        // Device keys first: the signatures reference them.
        self.process_outgoing(matrix).await?;
        let requests = self
            .machine
            .bootstrap_cross_signing(reset)
            .await
            .map_err(E2eeError::store)?;
        if let Some(upload) = &requests.upload_keys_req {
            if let matrix_sdk_crypto::types::requests::AnyOutgoingRequest::KeysUpload(r) =
                upload.request()
            {
                self.keys_upload(matrix, upload.request_id(), r).await?;
            }
        }
        self.upload_signing_keys(matrix, password, &requests.upload_signing_keys_req)
            .await?;
        let done = upload_signing_keys::v3::Response::new();
        self.mark_sent(
            &TransactionId::new(),
            AnyIncomingResponse::SigningKeysUpload(&done),
        )
        .await?;
        let resp = self
            .upload_signatures(matrix, &requests.upload_signatures_req)
            .await?;
        self.mark_sent(&TransactionId::new(), &resp).await
    }

    /// Signs the sync device with the self-signing key in the store and uploads the
    /// signature.
    pub async fn sign_own_device(&self, matrix: &MatrixClient) -> Result<(), E2eeError> {
        let me = self.machine.user_id().to_owned();
        let device = self
            .machine
            .get_device(&me, self.machine.device_id(), None)
            .await
            .map_err(E2eeError::store)?
            .ok_or_else(|| {
                E2eeError::Crypto("the sync device's keys are not published yet".into())
            })?;
        let request = device.verify().await.map_err(E2eeError::crypto)?;
        let resp = self.upload_signatures(matrix, &request).await?;
        if let Some((user, failures)) = resp.failures.iter().next() {
            return Err(E2eeError::Crypto(format!(
                "signature refused for {user}: {}",
                failures
                    .keys()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(())
    }

    /// `POST /keys/device_signing/upload`: the homeserver asks for user-interactive auth
    /// (401 with a session) and gets the account password.
    async fn upload_signing_keys(
        &self,
        matrix: &MatrixClient,
        password: &str,
        r: &UploadSigningKeysRequest,
    ) -> Result<(), E2eeError> {
        let mut body = json!({});
        for (name, key) in [
            ("master_key", &r.master_key),
            ("self_signing_key", &r.self_signing_key),
            ("user_signing_key", &r.user_signing_key),
        ] {
            if let Some(k) = key {
                body[name] = serde_json::to_value(k).map_err(E2eeError::crypto)?;
            }
        }
        let path = "keys/device_signing/upload";
        let first = self.post_raw(matrix, path, &body).await?;
        let session = match first {
            (200, _) => return Ok(()),
            (401, answer) => answer["session"].as_str().map(str::to_owned),
            (status, answer) => return Err(refused(status, &answer)),
        };
        body["auth"] = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": self.machine.user_id().as_str()},
            "password": password,
            "session": session,
        });
        match self.post_raw(matrix, path, &body).await? {
            (200, _) => Ok(()),
            (status, answer) => Err(refused(status, &answer)),
        }
    }

    /// A `POST` whose non-2xx answers are data (user-interactive auth answers 401 with
    /// the flows and session).
    async fn post_raw(
        &self,
        matrix: &MatrixClient,
        path: &str,
        body: &Value,
    ) -> Result<(u16, Value), E2eeError> {
        let resp = matrix
            .client_api(reqwest::Method::POST, &self.token(), path)?
            .json(body)
            .send()
            .await
            .map_err(unreachable)?;
        let status = resp.status().as_u16();
        let answer: Value = resp.json().await.unwrap_or_default();
        Ok((
            if (200..300).contains(&status) {
                200
            } else {
                status
            },
            answer,
        ))
    }
}

fn refused(status: u16, answer: &Value) -> E2eeError {
    E2eeError::Matrix(MatrixError::Http {
        status,
        errcode: answer["errcode"].as_str().unwrap_or_default().to_owned(),
        message: answer["error"].as_str().unwrap_or_default().to_owned(),
    })
}
