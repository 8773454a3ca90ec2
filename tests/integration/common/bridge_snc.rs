//! The bridge emulator's "starting new chats" endpoints (`snc` in the provisioning API):
//! `GET /v3/contacts`, `POST /v3/search_users`, `GET /v3/resolve_identifier/{id}` and
//! `POST /v3/create_dm/{id}`, with the statuses and error codes of mautrix-go's
//! `provisioning.go`: `FI.MAU.NOT_LOGGED_IN` (400) without a login, `M_NOT_FOUND` (404)
//! for an unknown identifier, `M_UNRECOGNIZED` (501) where the network cannot list.
//!
//! Each network has a fixed directory of remote people ([`directory`]); Telegram's cannot
//! be listed or searched (it answers `M_UNRECOGNIZED`), as some real networks do.
//!
//! `create_dm` really creates the portal on the test Synapse, appservice-less: the bridge
//! bot (`@<network>bot:<server>`, registered once and logged in afterwards) creates the
//! room with `m.bridge` state and invites the person's ghost (a registered user named like
//! a ghost, `@<network>_…:<server>`, matching the default `ghost_prefix`), the ghost joins
//! and invites the user. The same person again gives the same room with 200.

use serde_json::{json, Value};

use super::{error, json_response, Emu};
use crate::common::matrix::{self, MatrixUser};

/// A remote person of an emulated network.
#[derive(Debug, Clone)]
pub struct Remote {
    pub id: &'static str,
    pub name: &'static str,
    /// Identifier URIs (`tel:+…`, `telegram:…`).
    pub identifiers: &'static [&'static str],
}

/// The people of each network.
pub fn directory(network: super::Network) -> &'static [Remote] {
    use super::Network::*;
    match network {
        WhatsApp => &[
            Remote {
                id: "4915550001",
                name: "Alice Wonder",
                identifiers: &["tel:+4915550001"],
            },
            Remote {
                id: "4915550002",
                name: "Bob Builder",
                identifiers: &["tel:+4915550002"],
            },
            Remote {
                id: "4915550003",
                name: "Carla Cruz",
                identifiers: &["tel:+4915550003"],
            },
        ],
        Telegram => &[Remote {
            id: "5550100",
            name: "Tele Gram",
            identifiers: &["telegram:tguser2", "tel:+15550100123"],
        }],
        Discord => &[
            Remote {
                id: "80351110224678913",
                name: "Dora Explorer",
                identifiers: &["discord:dora"],
            },
            Remote {
                id: "80351110224678914",
                name: "Bob Discord",
                identifiers: &["discord:bobd"],
            },
        ],
    }
}

/// The person an identifier names: a contact id, a phone number (with or without `+`),
/// a username (with or without `@`), or a WhatsApp JID.
pub(super) fn find(network: super::Network, identifier: &str) -> Option<&'static Remote> {
    let bare = identifier
        .trim_start_matches(['+', '@'])
        .trim_end_matches("@s.whatsapp.net");
    directory(network).iter().find(|r| {
        r.id == bare
            || r.identifiers.iter().any(|i| {
                let value = i.split_once(':').map_or(*i, |(_, v)| v);
                value.trim_start_matches('+') == bare
            })
    })
}

impl Emu {
    fn remote_json(&self, user: &str, r: &Remote) -> Value {
        let s = self.state.lock().unwrap();
        let ghost = s.ghosts.get(r.id).map(|g| g.user_id.clone());
        let room = s.portals.get(&(user.to_owned(), r.id.to_owned())).cloned();
        let mut v = json!({"id": r.id, "name": r.name, "identifiers": r.identifiers});
        if let Some(g) = ghost {
            v["mxid"] = json!(g);
        }
        if let Some(room) = room {
            v["dm_room_mxid"] = json!(room);
        }
        v
    }

    /// mautrix-go's answer to a user without a login, if `user` has none.
    pub(super) fn without_login(&self, user: &str) -> Option<poem::Response> {
        self.logins_of(user)
            .is_empty()
            .then(|| error(400, "FI.MAU.NOT_LOGGED_IN", "Not logged in"))
    }

    fn lists(&self) -> bool {
        self.network != super::Network::Telegram
    }

    pub(super) fn contacts(&self, user: &str) -> poem::Response {
        if let Some(resp) = self.without_login(user) {
            return resp;
        }
        if !self.lists() {
            return error(
                501,
                "M_UNRECOGNIZED",
                "This bridge does not support listing contacts",
            );
        }
        let list: Vec<Value> = directory(self.network)
            .iter()
            .map(|r| self.remote_json(user, r))
            .collect();
        json_response(200, json!({"contacts": list}))
    }

    pub(super) fn search(&self, user: &str, body: &Value) -> poem::Response {
        let Some(query) = body["query"].as_str() else {
            return error(400, "M_NOT_JSON", "Failed to decode request body");
        };
        if let Some(resp) = self.without_login(user) {
            return resp;
        }
        if !self.lists() {
            return error(
                501,
                "M_UNRECOGNIZED",
                "This bridge does not support searching for users",
            );
        }
        let q = query.to_lowercase();
        let list: Vec<Value> = directory(self.network)
            .iter()
            .filter(|r| r.name.to_lowercase().contains(&q) || r.id.contains(&q))
            .map(|r| self.remote_json(user, r))
            .collect();
        json_response(200, json!({"results": list}))
    }

    pub(super) fn resolve(&self, user: &str, identifier: &str) -> poem::Response {
        if let Some(resp) = self.without_login(user) {
            return resp;
        }
        match find(self.network, identifier) {
            Some(r) => json_response(200, self.remote_json(user, r)),
            None => error(404, "M_NOT_FOUND", "Identifier not found"),
        }
    }

    pub(super) async fn create_dm(&self, user: &str, identifier: &str) -> poem::Response {
        if let Some(resp) = self.without_login(user) {
            return resp;
        }
        let Some(r) = find(self.network, identifier) else {
            return error(404, "M_NOT_FOUND", "Identifier not found");
        };
        // One creation at a time, so a repeat finds the portal of the first.
        let _one = self.creating.lock().await;
        let key = (user.to_owned(), r.id.to_owned());
        if self.state.lock().unwrap().portals.contains_key(&key) {
            return json_response(200, self.remote_json(user, r));
        }
        let room = self.create_portal(user, r).await;
        self.state.lock().unwrap().portals.insert(key, room);
        json_response(201, self.remote_json(user, r))
    }

    /// Bot creates the portal with bridge state and invites the ghost; the ghost joins and
    /// invites the user.
    async fn create_portal(&self, user: &str, r: &Remote) -> String {
        let net = self.network.id();
        let ghost = self.ghost(r).await;
        let bot = matrix::register_or_login(&format!("{net}bot")).await;
        let server = user.split_once(':').map_or("localhost", |(_, s)| s);
        let bridge = json!({
            "bridgebot": bot.user_id,
            "creator": bot.user_id,
            "protocol": {"id": net, "displayname": net},
            "channel": {"id": r.id, "displayname": r.name},
            "com.beeper.room_type": "dm",
            "com.beeper.room_type.v2": "dm",
        });
        let state_key = format!("{server}/{net}");
        let room = bot
            .create_room_with(json!({
                "preset": "private_chat",
                "is_direct": true,
                "invite": [ghost.user_id],
                "initial_state": [
                    {"type": "m.bridge", "state_key": state_key, "content": bridge},
                    {"type": "uk.half-shot.bridge", "state_key": state_key, "content": bridge},
                ],
            }))
            .await;
        ghost.join(&room).await;
        ghost.invite(&room, user).await;
        room
    }

    /// The person's ghost, registered on first use (named under the default ghost prefix).
    pub(super) async fn ghost(&self, r: &Remote) -> MatrixUser {
        if let Some(g) = self.state.lock().unwrap().ghosts.get(r.id).cloned() {
            return g;
        }
        let ghost = matrix::register(self.network.id()).await;
        ghost.set_display_name(r.name).await;
        self.state
            .lock()
            .unwrap()
            .ghosts
            .insert(r.id.to_owned(), ghost.clone());
        ghost
    }
}
