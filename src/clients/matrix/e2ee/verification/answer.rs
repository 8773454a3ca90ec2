//! The user's answers to a flow (accept, confirm the emoji, cancel), each sent to the other
//! device at once, and the cancel of flows the user did not start with their own devices.

use matrix_sdk_crypto::types::requests::OutgoingVerificationRequest;
use matrix_sdk_crypto::Sas;
use ruma::UserId;

use super::{Action, ActionError, State, VerificationInfo};
use crate::clients::matrix::e2ee::{E2eeError, UserCrypto};
use crate::clients::matrix::MatrixClient;

impl UserCrypto {
    /// Answers a flow and sends the answer at once; returns the flow as it stands then.
    pub async fn act_on_verification(
        &self,
        matrix: &MatrixClient,
        id: &str,
        action: Action,
    ) -> Result<VerificationInfo, ActionError> {
        let _guard = self.verifications.act.lock().await;
        if !self.is_taken_up(id) {
            return Err(ActionError::Unknown);
        }
        let current = self.snapshot(id).await.ok_or(ActionError::Unknown)?;
        let wrong = || ActionError::WrongState(current.state);
        let sas = self.sas(id);
        let request = self.request(id);
        match action {
            Action::Accept => {
                let out = match (&sas, &request) {
                    (Some(s), _) if current.state == State::Started && !s.we_started() => {
                        s.accept()
                    }
                    (None, Some(r)) if current.state == State::Requested => r.accept(),
                    _ => return Err(wrong()),
                };
                if let Some(f) = self.verifications.table().flows.get_mut(id) {
                    f.accepted = true;
                }
                if let Some(r) = out {
                    self.send_verification(matrix, r).await?;
                }
            }
            Action::Confirm => {
                let Some(s) = sas.filter(|_| current.state == State::KeysExchanged) else {
                    return Err(wrong());
                };
                if current.we_confirmed {
                    return Err(wrong());
                }
                self.confirm(matrix, &s).await?;
            }
            Action::Cancel => {
                if current.state.is_final() {
                    return Err(wrong());
                }
                let own = self.machine.user_id().to_owned();
                if !self.cancel_any(matrix, &own, id).await? {
                    // The crate never took it up (or let it go): nothing to tell the device.
                    if let Some(f) = self.verifications.table().flows.get_mut(id) {
                        f.lost = true;
                        f.last = None;
                    }
                }
            }
        }
        // Whatever the machine queued in answer (its key after theirs, a done) goes too.
        self.process_outgoing(matrix).await?;
        self.snapshot(id).await.ok_or(ActionError::Unknown)
    }

    /// The user confirmed that the emoji match: our MAC (and done) go out, and the
    /// signatures of the newly trusted device or identity are uploaded.
    async fn confirm(&self, matrix: &MatrixClient, sas: &Sas) -> Result<(), E2eeError> {
        let (requests, signatures) = sas.confirm().await.map_err(E2eeError::store)?;
        for r in requests {
            self.send_verification(matrix, r).await?;
        }
        if let Some(upload) = signatures {
            self.upload_signatures(matrix, &upload).await?;
        }
        Ok(())
    }

    /// Cancels a flow of `user` the crate knows; returns whether a cancel was sent.
    pub(super) async fn cancel_any(
        &self,
        matrix: &MatrixClient,
        user: &UserId,
        flow: &str,
    ) -> Result<bool, E2eeError> {
        let sas = self
            .machine
            .get_verification(user, flow)
            .and_then(|v| v.sas_v1());
        let out = match (sas, self.machine.get_verification_request(user, flow)) {
            (Some(s), _) => s.cancel(),
            (None, Some(r)) => r.cancel(),
            (None, None) => None,
        };
        match out {
            Some(r) => self.send_verification(matrix, r).await.map(|()| true),
            None => Ok(false),
        }
    }

    /// Sends one verification message (to-device; in-room flows are not taken up).
    pub(super) async fn send_verification(
        &self,
        matrix: &MatrixClient,
        request: OutgoingVerificationRequest,
    ) -> Result<(), E2eeError> {
        match request {
            OutgoingVerificationRequest::ToDevice(r) => self.to_device(matrix, &r).await,
            OutgoingVerificationRequest::InRoom(_) => Ok(()),
        }
    }
}
