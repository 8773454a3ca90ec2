//! What a verification shows: its state, emoji and trust, read from the crypto machine
//! (and the last view once the crate dropped a finished flow).

use matrix_sdk_crypto::{CancelInfo, Sas, SasState, VerificationRequest, VerificationRequestState};

use super::super::{E2eeError, UserCrypto};

pub use matrix_sdk_crypto::Emoji;

/// Where a verification stands, as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The other device asked (`m.key.verification.request`); accept or cancel.
    Requested,
    /// Accepted; waiting for the other device to start the emoji comparison.
    Ready,
    /// The emoji comparison was started (by the other device); accept it, or wait for the
    /// keys when it is accepted already.
    Started,
    /// The emoji can be compared; confirm when they match, cancel otherwise.
    KeysExchanged,
    Done,
    Cancelled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::Ready => "ready",
            Self::Started => "started",
            Self::KeysExchanged => "keys_exchanged",
            Self::Done => "done",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Cancelled)
    }
}

/// One verification as the API shows it.
#[derive(Debug, Clone)]
pub struct VerificationInfo {
    /// The flow id (the to-device `transaction_id`).
    pub id: String,
    pub other_device_id: String,
    pub state: State,
    /// The seven emoji while they can be compared (`keys_exchanged`), else empty.
    pub emoji: Vec<Emoji>,
    /// Whether this side confirmed that the emoji match (the other side may not have yet).
    pub we_confirmed: bool,
    /// Whether the other device is verified for the sync device now.
    pub other_device_verified: bool,
    /// The Matrix cancel code (`m.user`, `m.mismatched_sas`, `m.timeout`...) once cancelled.
    pub cancel_code: Option<String>,
}

/// What the API asks of a verification.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    Accept,
    Confirm,
    Cancel,
}

#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no such verification")]
    Unknown,
    #[error("the verification is {}", .0.as_str())]
    WrongState(State),
    #[error(transparent)]
    E2ee(#[from] E2eeError),
}

impl UserCrypto {
    pub(super) fn sas(&self, id: &str) -> Option<Box<Sas>> {
        self.machine
            .get_verification(self.machine.user_id(), id)
            .and_then(|v| v.sas_v1())
    }

    pub(super) fn request(&self, id: &str) -> Option<VerificationRequest> {
        self.machine
            .get_verification_request(self.machine.user_id(), id)
    }

    /// The flow as it stands: the crate's view while it has it, the last one after.
    pub(super) async fn snapshot(&self, id: &str) -> Option<VerificationInfo> {
        let (device, initial, last, lost) = {
            let t = self.verifications.table();
            let f = t.flows.get(id)?;
            (f.other_device.clone(), f.initial, f.last.clone(), f.lost)
        };
        let sas = self.sas(id);
        // A finished SAS names the devices it verified; the store has them a moment later.
        let mut sas_verified = false;
        let (state, emoji, we_confirmed, cancel) = if let Some(s) = &sas {
            let current = s.state();
            if let SasState::Done {
                verified_devices, ..
            } = &current
            {
                sas_verified = verified_devices
                    .iter()
                    .any(|d| d.device_id().as_str() == device);
            }
            let state = sas_state(&current);
            let emoji = match state {
                State::KeysExchanged => s.emoji().map(|e| e.to_vec()).unwrap_or_default(),
                _ => Vec::new(),
            };
            (state, emoji, s.have_we_confirmed(), s.cancel_info())
        } else if let Some(r) = self.request(id) {
            (
                request_state(&r.state()),
                Vec::new(),
                false,
                r.cancel_info(),
            )
        } else if let Some(last) = last {
            return Some(self.with_trust(last).await);
        } else if lost {
            (State::Cancelled, Vec::new(), false, None)
        } else {
            (initial, Vec::new(), false, None)
        };
        let mut info = self
            .with_trust(VerificationInfo {
                id: id.to_owned(),
                other_device_id: device,
                state,
                emoji,
                we_confirmed,
                other_device_verified: false,
                cancel_code: cancel.map(|c: CancelInfo| c.cancel_code().to_string()),
            })
            .await;
        info.other_device_verified |= sas_verified;
        if let Some(f) = self.verifications.table().flows.get_mut(id) {
            f.last = Some(info.clone());
        }
        Some(info)
    }

    pub(super) async fn with_trust(&self, mut info: VerificationInfo) -> VerificationInfo {
        let device = ruma::OwnedDeviceId::from(info.other_device_id.as_str());
        info.other_device_verified = matches!(
            self.machine.get_device(self.machine.user_id(), &device, None).await,
            Ok(Some(d)) if d.is_verified()
        );
        info
    }
}

fn sas_state(s: &SasState) -> State {
    match s {
        SasState::Created { .. } | SasState::Started { .. } | SasState::Accepted { .. } => {
            State::Started
        }
        SasState::KeysExchanged { .. } | SasState::Confirmed => State::KeysExchanged,
        SasState::Done { .. } => State::Done,
        SasState::Cancelled(_) => State::Cancelled,
    }
}

fn request_state(s: &VerificationRequestState) -> State {
    match s {
        VerificationRequestState::Created { .. } | VerificationRequestState::Requested { .. } => {
            State::Requested
        }
        VerificationRequestState::Ready { .. } => State::Ready,
        // The SAS object is asked first; a transitioned request without one (QR) waits.
        VerificationRequestState::Transitioned { .. } => State::Started,
        VerificationRequestState::Done => State::Done,
        VerificationRequestState::Cancelled(_) => State::Cancelled,
    }
}
