//! SAS (emoji) verification of the sync device with the user's own other Matrix devices.
//!
//! The crate's verification machine runs the protocol on the to-device events
//! [`UserCrypto::receive_sync`] feeds it; this module keeps track of the flows (the crate
//! forgets finished ones and has no list of SAS flows started without a request), answers
//! them for the API and sends what the answers produce at once, not on the next sync.
//!
//! Both ways of starting are handled: `m.key.verification.request` → `ready` → `start`
//! (Element and the Matrix SDKs) and a bare `m.key.verification.start` (the legacy flow
//! matrix-nio speaks), which begins in `started`. Only to-device flows with the user's own
//! devices are kept; a flow from another user is cancelled and never listed.

use std::collections::HashMap;
use std::sync::Mutex;

use matrix_sdk_crypto::SasState;
use ruma::events::AnyToDeviceEvent;
use ruma::serde::Raw;
use ruma::OwnedUserId;

use super::{E2eeError, UserCrypto};
use crate::clients::matrix::MatrixClient;

mod answer;
mod incoming;
mod view;

pub use view::{Action, ActionError, Emoji, State, VerificationInfo};

/// Flows kept per user; the oldest finished ones go first beyond this.
const MAX_FLOWS: usize = 32;

const REQUEST: &str = "m.key.verification.request";
const START: &str = "m.key.verification.start";

/// One flow of the user's own devices.
struct Flow {
    seq: u64,
    other_device: String,
    /// How it began (shown until the crate knows the flow).
    initial: State,
    /// The user accepted it: a SAS start on an accepted request is accepted at once.
    accepted: bool,
    /// The last state shown (the crate drops finished flows at the next sync).
    last: Option<VerificationInfo>,
    /// The last state announced on the event stream.
    reported: Option<State>,
    /// The crate has known this flow (a SAS or a request object): only such flows are
    /// listed, announced and answerable. A flow whose device's keys have not come yet is
    /// kept out until the crate takes it up, whatever the replay queue holds at the moment
    /// (a settle takes the queue out while it feeds it again).
    taken_up: bool,
    /// The crate let go of the flow before it finished (cancelled here while unknown).
    lost: bool,
}

#[derive(Default)]
struct Table {
    seq: u64,
    flows: HashMap<String, Flow>,
    /// Request and start events of own devices the crate did not know yet: fed again
    /// after the next key query ([`UserCrypto::settle_verifications`]).
    /// With the number of times each was fed again already.
    replay: Vec<(Raw<AnyToDeviceEvent>, u8)>,
    /// Flows other users started: cancelled by the next settle.
    foreign: Vec<(OwnedUserId, String)>,
}

/// The flows of one machine.
#[derive(Default)]
pub struct Flows {
    table: Mutex<Table>,
    /// Serialises answers (API actions and settling) so nothing is sent twice.
    act: tokio::sync::Mutex<()>,
}

impl Flows {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Nothing queued and every kept flow ended: no flow the crate could still expire
    /// or advance when it is fed a sync response.
    pub(super) fn all_settled(&self) -> bool {
        let t = self.table();
        t.replay.is_empty()
            && t.foreign.is_empty()
            && t.flows.values().all(|f| {
                f.lost
                    || f.reported.is_some_and(State::is_final)
                    || f.last.as_ref().is_some_and(|l| l.state.is_final())
            })
    }
}

impl UserCrypto {
    /// After a sync's requests went out: cancels other users' flows, feeds again the
    /// flows whose device was unknown (its keys were queried since), accepts SAS starts
    /// on requests the user accepted, sends what that produced, and returns the flows
    /// whose state changed since the last call (to announce them).
    pub async fn settle_verifications(
        &self,
        matrix: &MatrixClient,
    ) -> Result<Vec<VerificationInfo>, E2eeError> {
        let _guard = self.verifications.act.lock().await;
        let (foreign, replay) = {
            let mut t = self.verifications.table();
            (
                std::mem::take(&mut t.foreign),
                std::mem::take(&mut t.replay),
            )
        };
        let mut sent = false;
        for (user, flow) in foreign {
            match self.cancel_any(matrix, &user, &flow).await {
                Ok(done) => sent |= done,
                // The other user's device times out instead.
                Err(e) => {
                    tracing::warn!(user_id = %self.user_id, error = %e, "could not cancel another user's verification")
                }
            }
        }
        if !replay.is_empty() {
            // Their devices' keys may already be on the homeserver (the device uploaded
            // them before it started): ask now rather than after the next sync.
            if let Err(e) = self.query_own_keys(matrix).await {
                tracing::info!(user_id = %self.user_id, error = %e, "own device keys not queried; the next sync brings them");
            }
            self.replay(replay).await?;
        }
        sent |= self.accept_started_sas(matrix).await?;
        if sent {
            self.process_outgoing(matrix).await?;
        }
        Ok(self.changed_flows().await)
    }

    /// Accepts the SAS starts of the other device on requests the user accepted; whether
    /// anything was sent.
    async fn accept_started_sas(&self, matrix: &MatrixClient) -> Result<bool, E2eeError> {
        let mut sent = false;
        for (id, accepted) in self.flow_ids() {
            let Some(sas) = self.sas(&id) else { continue };
            if accepted && matches!(sas.state(), SasState::Started { .. }) && !sas.we_started() {
                if let Some(r) = sas.accept() {
                    self.send_verification(matrix, r).await?;
                    sent = true;
                }
            }
        }
        Ok(sent)
    }

    /// The flows whose state changed since they were last reported (now marked reported).
    async fn changed_flows(&self) -> Vec<VerificationInfo> {
        let mut changed = Vec::new();
        for (id, _) in self.flow_ids() {
            // An ended flow cannot change again: no store read for it on every sync.
            let ended = {
                let t = self.verifications.table();
                t.flows
                    .get(&id)
                    .and_then(|f| f.reported)
                    .is_some_and(State::is_final)
            };
            if ended {
                continue;
            }
            if let Some(info) = self.snapshot(&id).await {
                let mut t = self.verifications.table();
                if let Some(f) = t.flows.get_mut(&id) {
                    if f.reported != Some(info.state) {
                        f.reported = Some(info.state);
                        changed.push(info);
                    }
                }
            }
        }
        changed
    }

    /// Every kept flow, oldest first.
    pub async fn verifications(&self) -> Vec<VerificationInfo> {
        let mut out = Vec::new();
        for (id, _) in self.flow_ids() {
            if let Some(info) = self.snapshot(&id).await {
                out.push(info);
            }
        }
        out
    }

    /// One kept flow (not one the crate has not taken up yet).
    pub async fn verification(&self, id: &str) -> Option<VerificationInfo> {
        if !self.is_taken_up(id) {
            return None;
        }
        self.snapshot(id).await
    }

    fn is_taken_up(&self, id: &str) -> bool {
        self.verifications
            .table()
            .flows
            .get(id)
            .is_some_and(|f| f.taken_up)
    }

    /// The flows to list, answer and announce, oldest first.
    fn flow_ids(&self) -> Vec<(String, bool)> {
        listed(&self.verifications.table())
    }
}

/// The flows the crate has taken up, oldest first, with whether the user accepted each.
fn listed(t: &Table) -> Vec<(String, bool)> {
    let mut ids: Vec<_> = t
        .flows
        .iter()
        .filter(|(_, f)| f.taken_up)
        .map(|(id, f)| (f.seq, id.clone(), f.accepted))
        .collect();
    ids.sort();
    ids.into_iter().map(|(_, id, a)| (id, a)).collect()
}

/// Keeps at most [`MAX_FLOWS`] flows, dropping the oldest finished ones (then the oldest).
fn prune(t: &mut Table) {
    while t.flows.len() > MAX_FLOWS {
        let victim = t
            .flows
            .iter()
            .min_by_key(|(_, f)| {
                let done = f.last.as_ref().is_some_and(|l| l.state.is_final()) || f.lost;
                (!done, f.seq)
            })
            .map(|(id, _)| id.clone());
        match victim {
            Some(id) => t.flows.remove(&id),
            None => break,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(seq: u64, ended: bool) -> Flow {
        Flow {
            seq,
            other_device: "DEV".into(),
            initial: State::Started,
            accepted: false,
            last: ended.then(|| VerificationInfo {
                id: seq.to_string(),
                other_device_id: "DEV".into(),
                state: State::Done,
                emoji: Vec::new(),
                we_confirmed: true,
                other_device_verified: true,
                cancel_code: None,
            }),
            reported: None,
            taken_up: true,
            lost: false,
        }
    }

    #[test]
    fn a_flow_the_crate_has_not_taken_up_is_never_listed() {
        let mut t = Table::default();
        t.flows.insert("known".into(), flow(1, false));
        let mut unknown = flow(2, false);
        unknown.taken_up = false;
        t.flows.insert("unknown".into(), unknown);
        // The settle takes the replay queue out while it feeds it again: the listing must not
        // depend on the queue (it is empty here, as in the middle of a settle).
        assert!(t.replay.is_empty());
        assert_eq!(listed(&t), [("known".to_owned(), false)]);
        t.flows.get_mut("unknown").unwrap().taken_up = true;
        assert_eq!(listed(&t).len(), 2);
    }

    #[test]
    fn flows_are_settled_only_when_none_is_open_and_nothing_is_queued() {
        let flows = Flows::default();
        assert!(flows.all_settled(), "no flow at all");
        flows.table().flows.insert("done".into(), flow(1, true));
        assert!(flows.all_settled(), "an ended flow");
        flows.table().flows.insert("open".into(), flow(2, false));
        assert!(!flows.all_settled(), "an open flow");
        flows.table().flows.get_mut("open").unwrap().lost = true;
        assert!(flows.all_settled(), "a flow the crate let go of");
        let user = OwnedUserId::try_from("@other:example.org").unwrap();
        flows.table().foreign.push((user, "x".into()));
        assert!(!flows.all_settled(), "another user's flow to cancel");
    }

    #[test]
    fn pruning_drops_the_oldest_ended_flows_before_any_open_one() {
        let mut t = Table::default();
        // 30 open flows, then 10 ended ones (newer): the ended ones go first.
        for seq in 0..40 {
            t.flows.insert(seq.to_string(), flow(seq, seq >= 30));
        }
        prune(&mut t);
        assert_eq!(t.flows.len(), MAX_FLOWS);
        assert!((0..30).all(|s| t.flows.contains_key(&s.to_string())));
        assert!((30..38).all(|s| !t.flows.contains_key(&s.to_string())));
        // Only open flows left beyond the cap: the oldest go.
        for seq in 40..45 {
            t.flows.insert(seq.to_string(), flow(seq, false));
        }
        t.flows.retain(|_, f| f.last.is_none());
        prune(&mut t);
        assert_eq!(t.flows.len(), MAX_FLOWS);
        assert!(!t.flows.contains_key("0") && t.flows.contains_key("44"));
    }

    #[test]
    fn states_have_the_documented_names() {
        let names: Vec<_> = [
            State::Requested,
            State::Ready,
            State::Started,
            State::KeysExchanged,
            State::Done,
            State::Cancelled,
        ]
        .iter()
        .map(|s| (s.as_str(), s.is_final()))
        .collect();
        assert_eq!(
            names,
            [
                ("requested", false),
                ("ready", false),
                ("started", false),
                ("keys_exchanged", false),
                ("done", true),
                ("cancelled", true),
            ]
        );
    }
}
