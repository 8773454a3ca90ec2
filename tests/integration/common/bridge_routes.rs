//! The emulator's HTTP side: each provisioning call of the bridge API (see `bridge.rs`),
//! answered from the shared state, and the Matrix-style errors.

use std::sync::Arc;

use poem::http::StatusCode;
use poem::{Body, Request, Response};
use serde_json::{json, Value};

use super::*;

pub(super) fn error(status: u16, errcode: &str, message: &str) -> Response {
    json_response(status, json!({"errcode": errcode, "error": message}))
}

pub(super) fn json_response(status: u16, body: Value) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .content_type("application/json")
        .body(Body::from_string(body.to_string()))
}

pub(super) fn query_param(req: &Request, name: &str) -> Option<String> {
    let query = req.uri().query()?;
    reqwest::Url::parse(&format!("http://x/?{query}"))
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Percent-decodes one path segment.
pub(super) fn decode_segment(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 3 <= bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Emu {
    pub(super) async fn handle(self: Arc<Self>, mut req: Request) -> Response {
        let method = req.method().as_str().to_owned();
        let path = req.uri().path().to_owned();
        let user_id = query_param(&req, "user_id").filter(|u| !u.is_empty());
        let authorization = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body_bytes = req.take_body().into_vec().await.unwrap_or_default();
        let body: Value = serde_json::from_slice(&body_bytes).unwrap_or(Value::Null);
        self.state.lock().unwrap().requests.push(Recorded {
            method: method.clone(),
            path: path.clone(),
            user_id: user_id.clone(),
            authorization: authorization.clone(),
            body: body.clone(),
        });
        let Some(rest) = path.strip_prefix("/_matrix/provision/v3/") else {
            return error(404, "M_UNRECOGNIZED", "Unrecognized endpoint");
        };
        // Auth middleware, as mautrix-go's AuthMiddleware.
        let token = authorization
            .as_deref()
            .map(|a| a.strip_prefix("Bearer ").unwrap_or(a).to_owned())
            .unwrap_or_default();
        if token.is_empty() {
            return error(401, "M_MISSING_TOKEN", "Missing auth token");
        }
        if token != self.secret {
            return error(401, "M_UNKNOWN_TOKEN", "Invalid auth token");
        }
        let Some(user) = user_id else {
            return error(500, "M_UNKNOWN", "Failed to get user");
        };
        let segments: Vec<String> = rest.split('/').map(decode_segment).collect();
        let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
        let op = match (method.as_str(), seg.as_slice()) {
            ("GET", ["whoami"]) => Op::Whoami,
            ("GET", ["login", "flows"]) => Op::Flows,
            ("POST", ["login", "start", _]) => Op::Start,
            ("POST", ["login", "step", _, _, "display_and_wait"]) => Op::Wait,
            ("POST", ["login", "step", _, _, "user_input" | "cookies"]) => Op::Step,
            ("POST", ["logout", _]) => Op::Logout,
            ("GET", ["contacts"]) => Op::Contacts,
            ("POST", ["search_users"]) => Op::Search,
            ("GET", ["resolve_identifier", _]) => Op::Resolve,
            ("POST", ["create_dm", _]) => Op::CreateDm,
            ("GET", ["capabilities"]) => Op::Capabilities,
            ("POST", ["create_group", _]) => Op::CreateGroup,
            ("GET", ["logins"]) => {
                let ids: Vec<String> = self.logins_of(&user).into_iter().map(|l| l.id).collect();
                return json_response(200, json!({"login_ids": ids}));
            }
            ("POST", ["login", "cancel", id]) => {
                let removed = self.state.lock().unwrap().processes.remove(*id).is_some();
                self.notify.notify_waiters();
                return if removed {
                    json_response(200, json!({}))
                } else {
                    error(404, "M_NOT_FOUND", "Login not found")
                };
            }
            _ => return error(404, "M_UNRECOGNIZED", "Unrecognized endpoint"),
        };
        if let Some(resp) = self.armed_failure(op) {
            if matches!(op, Op::Step | Op::Wait) {
                // Any connector error ends the login process.
                self.state.lock().unwrap().processes.remove(seg[2]);
            }
            return resp;
        }
        match op {
            Op::Whoami => json_response(200, self.whoami(&user)),
            Op::Flows => json_response(200, json!({"flows": self.network.flows()})),
            Op::Start => self.start(&user, seg[2], query_param(&req, "login_id")),
            Op::Step => self.submit(&user, seg[2], seg[3], seg[4], &body),
            Op::Wait => self.wait(&user, seg[2].to_owned(), seg[3].to_owned()).await,
            Op::Logout => self.logout(&user, seg[1]),
            Op::Contacts => self.contacts(&user),
            Op::Search => self.search(&user, &body),
            Op::Resolve => self.resolve(&user, seg[1]),
            Op::CreateDm => self.create_dm(&user, seg[1]).await,
            Op::Capabilities => json_response(200, self.capabilities()),
            Op::CreateGroup => self.create_group(&user, seg[1], &body).await,
        }
    }

    fn armed_failure(&self, op: Op) -> Option<Response> {
        let mut s = self.state.lock().unwrap();
        let i = s.failures.iter().position(|f| f.0 == op)?;
        let (_, status, errcode, message) = s.failures.remove(i);
        Some(error(status, &errcode, &message))
    }

    pub(super) fn logins_of(&self, user: &str) -> Vec<Login> {
        self.state
            .lock()
            .unwrap()
            .logins
            .get(user)
            .cloned()
            .unwrap_or_default()
    }

    fn whoami(&self, user: &str) -> Value {
        let net = self.network.id();
        let logins: Vec<Value> = self
            .logins_of(user)
            .into_iter()
            .map(|l| {
                let mut state = json!({"state_event": l.state_event, "timestamp": 1_755_600_000, "ttl": 21600, "source": "bridge"});
                if let Some(e) = &l.error {
                    state["error"] = json!(e);
                }
                if let Some(m) = &l.message {
                    state["message"] = json!(m);
                }
                json!({
                    "state_event": l.state_event, "state_ts": 1_755_600_000,
                    "state": state, "id": l.id, "name": l.name, "profile": l.profile,
                    "space_room": format!("!space-{}:localhost", l.id),
                })
            })
            .collect();
        json!({
            "network": {"displayname": net, "network_url": format!("https://{net}.example"),
                        "network_icon": "mxc://example.org/icon", "network_id": net, "beeper_bridge_type": net},
            "login_flows": self.network.flows(),
            "homeserver": "localhost",
            "bridge_bot": format!("@{net}bot:localhost"),
            "command_prefix": format!("!{net}"),
            "management_room": "!mgmt:localhost",
            "logins": logins,
        })
    }

    pub(super) fn next_id(&self, prefix: &str) -> String {
        let mut s = self.state.lock().unwrap();
        s.counter += 1;
        format!("{prefix}{:08x}{}", s.counter, std::process::id())
    }

    fn qr_step(&self, step_id: &str) -> Value {
        json!({
            "type": "display_and_wait", "step_id": step_id, "txn_id": self.next_id("bls_"),
            "instructions": "Scan the QR code with the mobile app to log in",
            "display_and_wait": {"type": "qr", "data": format!("2@{},{}", self.next_id("qr"), self.next_id(""))},
        })
    }

    fn input_step(&self, step_id: &str, field_type: &str, field_id: &str, name: &str) -> Value {
        json!({
            "type": "user_input", "step_id": step_id, "txn_id": self.next_id("bls_"), "instructions": "",
            "user_input": {"fields": [{"type": field_type, "id": field_id, "name": name,
                                        "description": format!("Enter your {}", name.to_lowercase())}],
                           "attachments": null},
        })
    }

    fn first_step(&self, flow: &str) -> Option<Value> {
        Some(match (self.network, flow) {
            (Network::WhatsApp, "qr") => self.qr_step("fi.mau.whatsapp.login.qr"),
            (Network::WhatsApp, "phone") => self.input_step(
                "fi.mau.whatsapp.login.phone",
                "phone_number",
                "phone_number",
                "Phone number",
            ),
            (Network::Telegram, "phone") => self.input_step(
                "fi.mau.telegram.login.phone_number",
                "phone_number",
                "fi.mau.telegram.login.phone_number",
                "Phone number",
            ),
            (Network::Telegram, "qr") => self.qr_step("fi.mau.telegram.login.show_qr"),
            (Network::Discord, "token") => json!({
                "type": "cookies", "step_id": "fi.mau.discord.cookies", "txn_id": self.next_id("bls_"),
                "instructions": "Log in with Discord.",
                "cookies": {"url": "https://discord.com/login", "extract_js": "new Promise(r => r({token: localStorage.token}))",
                            "fields": [{"id": "token", "required": true,
                                        "sources": [{"type": "special", "name": "fi.mau.discord.token"}]}]},
            }),
            (Network::Discord, "qr") => self.qr_step("fi.mau.discord.login.qr"),
            _ => return None,
        })
    }

    fn start(&self, user: &str, flow: &str, relogin: Option<String>) -> Response {
        if let Some(id) = &relogin {
            if !self.logins_of(user).iter().any(|l| &l.id == id) {
                return error(404, "M_NOT_FOUND", "Login not found");
            }
        }
        let Some(step) = self.first_step(flow) else {
            // mautrix-go answers a connector's "invalid login flow ID" as an internal error.
            return error(500, "M_UNKNOWN", "Internal error creating login process");
        };
        let id = self.next_id("d2k");
        self.state.lock().unwrap().processes.insert(
            id.clone(),
            Process {
                user: user.to_owned(),
                flow: flow.to_owned(),
                step: step.clone(),
                relogin,
                phone: None,
                pending: None,
            },
        );
        json_response(200, with_process(&id, step))
    }

    /// The process if it exists, belongs to `user` and expects `step_id` of `step_type`.
    fn check_step(
        &self,
        user: &str,
        proc_id: &str,
        step_id: &str,
        step_type: &str,
    ) -> Result<(), Box<Response>> {
        let s = self.state.lock().unwrap();
        let Some(p) = s.processes.get(proc_id).filter(|p| p.user == user) else {
            return Err(Box::new(error(404, "M_NOT_FOUND", "Login not found")));
        };
        if p.step["step_id"] != step_id {
            return Err(Box::new(error(
                400,
                "M_BAD_STATE",
                "Step ID does not match",
            )));
        }
        if p.step["type"] != step_type {
            return Err(Box::new(error(
                400,
                "M_BAD_STATE",
                "Step type does not match",
            )));
        }
        Ok(())
    }

    fn submit(
        &self,
        user: &str,
        proc_id: &str,
        step_id: &str,
        step_type: &str,
        body: &Value,
    ) -> Response {
        if let Err(resp) = self.check_step(user, proc_id, step_id, step_type) {
            return *resp;
        }
        let Some(fields) = body
            .as_object()
            .filter(|m| m.values().all(Value::is_string))
        else {
            return error(400, "M_NOT_JSON", "Failed to decode request body");
        };
        let value = |k: &str| {
            fields
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (flow, phone) = {
            let s = self.state.lock().unwrap();
            let p = &s.processes[proc_id];
            (p.flow.clone(), p.phone.clone())
        };
        let next = match (self.network, step_id) {
            (Network::Telegram, "fi.mau.telegram.login.phone_number") => {
                let number = value("fi.mau.telegram.login.phone_number");
                if !number.starts_with('+') {
                    self.state.lock().unwrap().processes.remove(proc_id);
                    return error(
                        400,
                        "FI.MAU.TELEGRAM.PHONE_NUMBER_INVALID",
                        "Phone number must start with +",
                    );
                }
                self.state
                    .lock()
                    .unwrap()
                    .processes
                    .get_mut(proc_id)
                    .unwrap()
                    .phone = Some(number);
                self.input_step(
                    "fi.mau.telegram.login.code",
                    "2fa_code",
                    "fi.mau.telegram.login.code",
                    "Code",
                )
            }
            (Network::Telegram, "fi.mau.telegram.login.code") => {
                let phone = phone.unwrap_or_default();
                let login = Login {
                    id: phone.trim_start_matches('+').to_owned(),
                    name: phone.clone(),
                    profile: json!({"phone": phone, "name": "Telegram User", "username": "tguser"}),
                    state_event: "CONNECTED".into(),
                    error: None,
                    message: None,
                };
                return self.finish(user, proc_id, login);
            }
            (Network::WhatsApp, "fi.mau.whatsapp.login.phone") => json!({
                "type": "display_and_wait", "step_id": "fi.mau.whatsapp.login.code", "txn_id": self.next_id("bls_"),
                "instructions": "Input the pairing code in the WhatsApp mobile app to log in",
                "display_and_wait": {"type": "code", "data": "ABCD-EFGH"},
            }),
            (Network::Discord, "fi.mau.discord.cookies") => {
                let token = value("token");
                if token.is_empty() {
                    self.state.lock().unwrap().processes.remove(proc_id);
                    return error(400, "FI.MAU.DISCORD.MISSING_TOKEN", "Missing token");
                }
                let login = Login {
                    id: "80351110224678912".into(),
                    name: "nelly".into(),
                    profile: json!({"username": "nelly", "name": "Nelly"}),
                    state_event: "CONNECTED".into(),
                    error: None,
                    message: None,
                };
                return self.finish(user, proc_id, login);
            }
            _ => {
                return error(
                    500,
                    "M_UNKNOWN",
                    &format!("Internal error submitting input ({flow})"),
                )
            }
        };
        self.state
            .lock()
            .unwrap()
            .processes
            .get_mut(proc_id)
            .unwrap()
            .step = next.clone();
        json_response(200, with_process(proc_id, next))
    }

    /// Records the login, ends the process and answers the completion step.
    fn finish(&self, user: &str, proc_id: &str, login: Login) -> Response {
        let mut s = self.state.lock().unwrap();
        let relogin = s.processes.remove(proc_id).and_then(|p| p.relogin);
        let list = s.logins.entry(user.to_owned()).or_default();
        if let Some(old) = relogin.filter(|old| *old != login.id) {
            list.retain(|l| l.id != old);
        }
        list.retain(|l| l.id != login.id);
        list.push(login.clone());
        let net = self.network.id();
        json_response(
            200,
            json!({
                "login_id": proc_id, "type": "complete", "step_id": format!("fi.mau.{net}.login.complete"),
                "instructions": format!("Successfully logged in as {}", login.name),
                "complete": {"user_login_id": login.id},
            }),
        )
    }

    async fn wait(&self, user: &str, proc_id: String, step_id: String) -> Response {
        if let Err(resp) = self.check_step(user, &proc_id, &step_id, "display_and_wait") {
            return *resp;
        }
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let event = {
                let mut s = self.state.lock().unwrap();
                match s.processes.get_mut(&proc_id) {
                    None => {
                        return error(410, "FI.MAU.BRIDGE.LOGIN_CANCELLED", "Login was cancelled")
                    }
                    Some(p) => p.pending.take(),
                }
            };
            match event {
                Some(WaitEvent::Complete(login)) => return self.finish(user, &proc_id, login),
                Some(WaitEvent::RefreshQr) => {
                    let step = self.qr_step(&step_id);
                    self.state
                        .lock()
                        .unwrap()
                        .processes
                        .get_mut(&proc_id)
                        .unwrap()
                        .step = step.clone();
                    return json_response(200, with_process(&proc_id, step));
                }
                Some(WaitEvent::Expire) => {
                    self.state.lock().unwrap().processes.remove(&proc_id);
                    return match self.network {
                        Network::WhatsApp => error(
                            400,
                            "FI.MAU.WHATSAPP.LOGIN_TIMEOUT",
                            "Entering code or scanning QR timed out. Please try again.",
                        ),
                        _ => error(
                            410,
                            "FI.MAU.BRIDGE.LOGIN_TIMED_OUT",
                            "Login process timed out",
                        ),
                    };
                }
                None => notified.await,
            }
        }
    }

    fn logout(&self, user: &str, login_id: &str) -> Response {
        let mut s = self.state.lock().unwrap();
        let list = s.logins.entry(user.to_owned()).or_default();
        if login_id == "all" {
            list.clear();
        } else if list.iter().any(|l| l.id == login_id) {
            list.retain(|l| l.id != login_id);
        } else {
            return error(404, "M_NOT_FOUND", "Login not found");
        }
        json_response(200, json!({}))
    }
}

pub(super) fn with_process(process_id: &str, mut step: Value) -> Value {
    step["login_id"] = json!(process_id);
    step
}
