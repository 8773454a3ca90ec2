//! A mautrix bridgev2 provisioning API emulator: the suite's only test double.
//!
//! A real HTTP server (poem) on 127.0.0.1:0 inside the test process that speaks the
//! provisioning API of `shared/reference/provisioning.yaml` under `/_matrix/provision/v3/`:
//! shared-secret auth (401 `M_MISSING_TOKEN` / `M_UNKNOWN_TOKEN`), `?user_id=` on every
//! call, whoami with logins and their bridge state, login flows, login processes with
//! `user_input`, `cookies` and `display_and_wait` (QR / pairing code) steps, completion
//! `{"type": "complete", "complete": {"user_login_id"}}`, logout of one login or `all`.
//! Errors are Matrix-style `{"errcode", "error"}` with the statuses of mautrix-go HEAD.
//!
//! Tests drive it through [`BridgeEmulator`]: complete a pending QR login, refresh the
//! QR code, expire a process, make the next call of a kind fail, change a login's state,
//! or stop the server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use poem::Request;
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};

#[path = "bridge_snc.rs"]
pub mod snc;

#[path = "bridge_groups.rs"]
pub mod groups;

#[path = "bridge_routes.rs"]
mod routes;
use routes::*;

pub const SHARED_SECRET: &str = "emulator-shared-secret-0123456789";

/// Which bridge to emulate: its flows and steps follow the real connector's ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    WhatsApp,
    Telegram,
    Discord,
}

impl Network {
    fn id(self) -> &'static str {
        match self {
            Self::WhatsApp => "whatsapp",
            Self::Telegram => "telegram",
            Self::Discord => "discord",
        }
    }

    fn flows(self) -> Value {
        match self {
            Self::WhatsApp => json!([
                {"name": "QR", "description": "Scan a QR code to pair the bridge to your WhatsApp account", "id": "qr"},
                {"name": "Pairing code", "description": "Input your phone number to get a pairing code, to pair the bridge to your WhatsApp account", "id": "phone"}
            ]),
            Self::Telegram => json!([
                {"name": "Phone number", "description": "Login using your Telegram phone number", "id": "phone"},
                {"name": "QR code", "description": "Login by scanning a QR code from another device", "id": "qr"}
            ]),
            Self::Discord => json!([
                {"name": "Browser", "description": "Log in with your Discord account in a browser", "id": "token"},
                {"name": "QR", "description": "Scan a QR code with the Discord mobile app", "id": "qr"}
            ]),
        }
    }
}

/// Kinds of calls a failure can be armed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Whoami,
    Flows,
    Start,
    Step,
    Wait,
    Logout,
    Contacts,
    Search,
    Resolve,
    CreateDm,
    Capabilities,
    CreateGroup,
}

/// One request as the emulator received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub user_id: Option<String>,
    pub authorization: Option<String>,
    pub body: Value,
}

/// A login of a user at the emulated bridge.
#[derive(Debug, Clone)]
pub struct Login {
    pub id: String,
    pub name: String,
    pub profile: Value,
    pub state_event: String,
    pub error: Option<String>,
    pub message: Option<String>,
}

impl Login {
    pub fn connected(id: &str, name: &str) -> Self {
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            profile: json!({"phone": name, "name": format!("Remote {id}")}),
            state_event: "CONNECTED".into(),
            error: None,
            message: None,
        }
    }
}

enum WaitEvent {
    Complete(Login),
    RefreshQr,
    Expire,
}

struct Process {
    user: String,
    flow: String,
    step: Value,
    relogin: Option<String>,
    phone: Option<String>,
    pending: Option<WaitEvent>,
}

#[derive(Default)]
struct State {
    logins: HashMap<String, Vec<Login>>,
    processes: HashMap<String, Process>,
    failures: Vec<(Op, u16, String, String)>,
    requests: Vec<Recorded>,
    counter: u64,
    /// Ghosts by remote person id (see `snc`).
    ghosts: HashMap<String, super::matrix::MatrixUser>,
    /// Portal rooms by (Matrix user, remote person id).
    portals: HashMap<(String, String), String>,
    /// Group portals by the network's group id: (creating Matrix user, room, participants).
    groups: HashMap<String, (String, String, Vec<String>)>,
}

struct Emu {
    network: Network,
    secret: String,
    state: Mutex<State>,
    notify: Notify,
    /// Serialises `create_dm` (see `snc`).
    creating: tokio::sync::Mutex<()>,
}

/// A running emulator; stopped on drop.
pub struct BridgeEmulator {
    pub base: String,
    pub network: Network,
    emu: Arc<Emu>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl BridgeEmulator {
    pub async fn start(network: Network) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind emulator");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let emu = Arc::new(Emu {
            network,
            secret: SHARED_SECRET.to_owned(),
            state: Mutex::new(State::default()),
            notify: Notify::new(),
            creating: tokio::sync::Mutex::new(()),
        });
        let app = {
            let emu = emu.clone();
            poem::endpoint::make(move |req: Request| {
                let emu = emu.clone();
                async move { emu.handle(req).await }
            })
        };
        let (tx, task) = super::serve_standin(listener, app);
        Self {
            base: format!("http://127.0.0.1:{port}"),
            network,
            emu,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// `provisioning_url` for switchboard's config.
    pub fn provisioning_url(&self) -> String {
        format!("{}/_matrix/provision", self.base)
    }

    /// The `[bridges.<platform>]` section pointing at this emulator.
    pub fn config_section(&self) -> String {
        self.config_section_with_secret(SHARED_SECRET)
    }

    pub fn config_section_with_secret(&self, secret: &str) -> String {
        format!(
            "[bridges.{}]\nprovisioning_url = \"{}\"\nshared_secret = \"{secret}\"\nbot_user_id = \"@{}bot:localhost\"\n\n",
            self.network.id(),
            self.provisioning_url(),
            self.network.id()
        )
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.emu.state.lock().unwrap());
        self.emu.notify.notify_waiters();
        out
    }

    /// Completes a pending `display_and_wait` step of `process_id` as `login`.
    pub fn complete_login(&self, process_id: &str, login: Login) {
        self.with(|s| {
            s.processes.get_mut(process_id).expect("process").pending =
                Some(WaitEvent::Complete(login));
        });
    }

    /// Makes the pending `display_and_wait` answer a fresh QR code.
    pub fn refresh_qr(&self, process_id: &str) {
        self.with(|s| {
            s.processes.get_mut(process_id).expect("process").pending = Some(WaitEvent::RefreshQr);
        });
    }

    /// Makes the pending `display_and_wait` fail with the bridge's login timeout.
    pub fn expire(&self, process_id: &str) {
        self.with(|s| {
            s.processes.get_mut(process_id).expect("process").pending = Some(WaitEvent::Expire);
        });
    }

    /// Makes the next call of kind `op` fail with `status` `{"errcode", "error"}`.
    pub fn fail_next(&self, op: Op, status: u16, errcode: &str, message: &str) {
        self.with(|s| {
            s.failures
                .push((op, status, errcode.to_owned(), message.to_owned()))
        });
    }

    /// Adds (or replaces) a login of `user`.
    pub fn add_login(&self, user: &str, login: Login) {
        self.with(|s| {
            let list = s.logins.entry(user.to_owned()).or_default();
            list.retain(|l| l.id != login.id);
            list.push(login);
        });
    }

    /// Changes the bridge state of a login.
    pub fn set_state(
        &self,
        user: &str,
        login_id: &str,
        state_event: &str,
        error: Option<&str>,
        message: Option<&str>,
    ) {
        self.with(|s| {
            let login = s
                .logins
                .get_mut(user)
                .and_then(|l| l.iter_mut().find(|l| l.id == login_id))
                .expect("login");
            login.state_event = state_event.to_owned();
            login.error = error.map(str::to_owned);
            login.message = message.map(str::to_owned);
        });
    }

    pub fn login_ids(&self, user: &str) -> Vec<String> {
        self.with(|s| {
            s.logins
                .get(user)
                .map(|l| l.iter().map(|l| l.id.clone()).collect())
                .unwrap_or_default()
        })
    }

    /// The current QR payload of a process's display step.
    pub fn qr_of(&self, process_id: &str) -> Option<String> {
        self.with(|s| {
            s.processes.get(process_id).and_then(|p| {
                p.step["display_and_wait"]["data"]
                    .as_str()
                    .map(str::to_owned)
            })
        })
    }

    pub fn has_process(&self, process_id: &str) -> bool {
        self.with(|s| s.processes.contains_key(process_id))
    }

    /// The portal room `create_dm` made for `user` and the remote person `remote_id`.
    pub fn portal_of(&self, user: &str, remote_id: &str) -> Option<String> {
        self.with(|s| {
            s.portals
                .get(&(user.to_owned(), remote_id.to_owned()))
                .cloned()
        })
    }

    /// The ghost of the remote person `remote_id`, once `create_dm` made it.
    pub fn ghost_of(&self, remote_id: &str) -> Option<super::matrix::MatrixUser> {
        self.with(|s| s.ghosts.get(remote_id).cloned())
    }

    /// The group `create_group` made: (creating user, portal room, participant ids), by
    /// the room.
    pub fn group_by_room(&self, room_id: &str) -> Option<(String, String, Vec<String>)> {
        self.with(|s| {
            s.groups
                .iter()
                .find(|(_, g)| g.1 == room_id)
                .map(|(id, g)| (id.clone(), g.0.clone(), g.2.clone()))
        })
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.with(|s| s.requests.clone())
    }

    /// Stops the server: afterwards connections are refused.
    pub async fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

impl Drop for BridgeEmulator {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}
