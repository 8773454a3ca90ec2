//! The arriving side of verification: request and start events of a sync noted as flows,
//! and those whose device the crate did not know yet fed again after later syncs.

use matrix_sdk_crypto::EncryptionSyncChanges;
use ruma::events::AnyToDeviceEvent;
use ruma::serde::Raw;
use ruma::OwnedUserId;
use serde_json::Value;

use super::{prune, Flow, State, REQUEST, START};
use crate::clients::matrix::e2ee::{E2eeError, UserCrypto};

/// Syncs after which a verification from a device whose keys never came is given up.
const MAX_REPLAYS: u8 = 10;

fn field(raw: &Raw<AnyToDeviceEvent>, name: &str) -> Option<Value> {
    raw.get_field::<Value>(name).ok().flatten()
}

impl UserCrypto {
    /// Notes the verification flows that to-device events of one sync begin (called by
    /// [`UserCrypto::receive_sync`] with what the machine processed, decrypted ones too).
    pub(in crate::clients::matrix::e2ee) fn note_verification_events<'a>(
        &self,
        events: impl Iterator<Item = &'a Raw<AnyToDeviceEvent>>,
    ) {
        let own = self.machine.user_id();
        let mut table = self.verifications.table();
        for raw in events {
            let kind = field(raw, "type");
            let initial = match kind.as_ref().and_then(Value::as_str) {
                Some(REQUEST) => State::Requested,
                Some(START) => State::Started,
                _ => continue,
            };
            let content = field(raw, "content").unwrap_or_default();
            let (Some(flow), Some(device)) = (
                content["transaction_id"].as_str(),
                content["from_device"].as_str(),
            ) else {
                continue;
            };
            let sender = field(raw, "sender").and_then(|s| s.as_str().map(str::to_owned));
            let Some(sender) = sender.and_then(|s| OwnedUserId::try_from(s).ok()) else {
                continue;
            };
            if sender != own {
                tracing::info!(user_id = %self.user_id, other_user = %sender, "verification from another user; cancelling it");
                table.foreign.push((sender, flow.to_owned()));
                continue;
            }
            if device == self.device_id || table.flows.contains_key(flow) {
                continue; // our own echo, or the start of a known request
            }
            // Not listed until the crate knows it (see `Flow::taken_up`): listed earlier, an
            // "accept" could only be refused.
            let taken_up = self.machine.get_verification(own, flow).is_some()
                || self.machine.get_verification_request(own, flow).is_some();
            if !taken_up {
                table.replay.push((raw.clone(), 0));
            }
            table.seq += 1;
            let seq = table.seq;
            tracing::info!(user_id = %self.user_id, other_device = device, state = initial.as_str(), "verification from an own device");
            table.flows.insert(
                flow.to_owned(),
                Flow {
                    seq,
                    other_device: device.to_owned(),
                    initial,
                    accepted: false,
                    last: None,
                    reported: None,
                    taken_up,
                    lost: false,
                },
            );
        }
        prune(&mut table);
    }

    /// Feeds request and start events again whose device was unknown when they came.
    ///
    /// The device's keys may come only with a later sync (its sign-in is announced in a
    /// device-list change the sync after its first message): an event still unknown is fed
    /// again after each of the next [`MAX_REPLAYS`] syncs before its flow is given up.
    pub(super) async fn replay(
        &self,
        queued: Vec<(Raw<AnyToDeviceEvent>, u8)>,
    ) -> Result<(), E2eeError> {
        let events: Vec<Raw<AnyToDeviceEvent>> = queued.iter().map(|(e, _)| e.clone()).collect();
        let lists = Default::default();
        let counts = Default::default();
        let changes = EncryptionSyncChanges {
            to_device_events: events.clone(),
            changed_devices: &lists,
            one_time_keys_counts: &counts,
            unused_fallback_keys: None,
            next_batch_token: None,
        };
        self.machine
            .receive_sync_changes(changes, &Self::decryption_settings())
            .await
            .map_err(E2eeError::crypto)?;
        let own = self.machine.user_id();
        let mut t = self.verifications.table();
        for (e, tries) in queued {
            let content = field(&e, "content").unwrap_or_default();
            let Some(flow) = content["transaction_id"].as_str() else {
                continue;
            };
            let known = self.machine.get_verification(own, flow).is_some()
                || self.machine.get_verification_request(own, flow).is_some();
            let Some(f) = t.flows.get_mut(flow) else {
                continue;
            };
            if known {
                f.taken_up = true;
                tracing::info!(user_id = %self.user_id, other_device = %f.other_device, "verification from a device whose keys came late; taken up");
            } else if tries + 1 < MAX_REPLAYS {
                tracing::debug!(user_id = %self.user_id, other_device = %f.other_device, "verification from a device whose keys are not known yet; fed again after the next sync");
                t.replay.push((e, tries + 1));
            } else {
                tracing::info!(user_id = %self.user_id, other_device = %f.other_device, "verification from a device whose keys are unknown; dropped");
                f.lost = true;
            }
        }
        Ok(())
    }
}
