//! Request and response objects of the bridge login flow (start, steps, wait, progress,
//! connect and disconnect); the status objects are in `objects`.

use super::*;

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginFlow")]
pub struct LoginFlow {
    /// Pass as `flowId` to `login/start`, e.g. `qr`, `phone`, `token`.
    pub id: String,
    pub name: String,
    pub description: String,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginFlows")]
pub struct LoginFlows {
    pub flows: Vec<LoginFlow>,
}

/// What a `display_and_wait` step shows.
#[derive(Debug, Object)]
#[oai(rename = "BridgeDisplayAndWait", rename_all = "camelCase")]
pub struct DisplayAndWait {
    /// `qr` (render `data` as a QR code), `emoji`, `code` (show `data` to type in
    /// elsewhere) or `nothing`.
    #[oai(rename = "type")]
    pub display_type: String,
    pub data: Option<String>,
    /// An image of the thing to show; preferred over `data` when present.
    pub image_url: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeStepComplete", rename_all = "camelCase")]
pub struct StepComplete {
    /// The new login's id.
    pub user_login_id: String,
}

/// One step of a login process. Exactly one of `displayAndWait`, `userInput`, `cookies`
/// and `complete` is set, by `type`.
#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStep", rename_all = "camelCase")]
pub struct LoginStepObject {
    /// Stable id of the step, e.g. `fi.mau.whatsapp.login.qr`; send it back with the step.
    pub step_id: String,
    /// `display_and_wait` (show, then call `login/wait`), `user_input` or `cookies`
    /// (collect the fields, then call `login/step`), `complete`; `webauthn` and
    /// `client_http` steps are not supported by this API.
    #[oai(rename = "type")]
    pub step_type: String,
    /// Human-readable instructions for the step (may be empty).
    pub instructions: String,
    pub display_and_wait: Option<DisplayAndWait>,
    /// The bridge's `user_input` object as is: `{"fields": [{"type", "id", "name",
    /// "description", "pattern"?, "default_value"?, "options"?}], "attachments"?}`. Submit
    /// `data` keyed by the field ids.
    pub user_input: Option<BTreeMap<String, Value>>,
    /// The bridge's `cookies` object as is: `{"url", "user_agent"?, "fields": [{"id",
    /// "required", "sources": [{"type", "name", …}]}], "extract_js"?}`. Submit `data`
    /// keyed by the field ids.
    pub cookies: Option<BTreeMap<String, Value>>,
    pub complete: Option<StepComplete>,
}

fn object(value: Option<Value>) -> Option<BTreeMap<String, Value>> {
    match value? {
        Value::Object(map) => Some(map.into_iter().collect()),
        _ => None,
    }
}

impl From<LoginStep> for LoginStepObject {
    fn from(s: LoginStep) -> Self {
        let display_and_wait = s.display_and_wait.as_ref().map(|d| DisplayAndWait {
            display_type: d["type"].as_str().unwrap_or_default().to_owned(),
            data: d["data"].as_str().map(str::to_owned),
            image_url: d["image_url"].as_str().map(str::to_owned),
        });
        Self {
            step_id: s.step_id,
            step_type: s.step_type,
            instructions: s.instructions,
            display_and_wait,
            user_input: object(s.user_input),
            cookies: object(s.cookies),
            complete: s.complete.map(|c| StepComplete {
                user_login_id: c.user_login_id,
            }),
        }
    }
}

/// The expiry of a login process.
#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginTimeout", rename_all = "camelCase")]
pub struct LoginTimeout {
    /// Lifetime of the login process (30 minutes).
    pub total_seconds: i64,
    /// Seconds left; 0 once expired.
    pub remaining_seconds: i64,
    pub expires_at: DateTime<Utc>,
}

impl From<ProcessTimeout> for LoginTimeout {
    fn from(t: ProcessTimeout) -> Self {
        Self {
            total_seconds: t.total_seconds,
            remaining_seconds: t.remaining_seconds,
            expires_at: time(t.expires_at),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStartRequest", rename_all = "camelCase")]
pub struct LoginStartRequest {
    /// A flow id from `GET /api/bridges/{platform}/flows`.
    pub flow_id: String,
    /// To re-authenticate an existing login (e.g. after `BAD_CREDENTIALS`), its id.
    pub login_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStarted", rename_all = "camelCase")]
pub struct LoginStarted {
    /// The bridge's login process id; pass it to `login/step` and `login/wait`.
    pub login_process_id: String,
    /// The first step.
    pub step: LoginStepObject,
    pub timeout: LoginTimeout,
}

#[derive(Debug, Enum)]
#[oai(rename = "BridgeSubmitStepType", rename_all = "snake_case")]
pub enum SubmitStepType {
    UserInput,
    Cookies,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStepRequest", rename_all = "camelCase")]
pub struct LoginStepRequest {
    pub login_process_id: String,
    /// The `stepId` of the step being submitted.
    pub step_id: String,
    /// The `type` of the step being submitted.
    pub step_type: SubmitStepType,
    /// Field values keyed by field id (the ids in `userInput.fields` / `cookies.fields`).
    pub data: BTreeMap<String, String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginWaitRequest", rename_all = "camelCase")]
pub struct LoginWaitRequest {
    pub login_process_id: String,
    /// The `stepId` of the `display_and_wait` step being shown.
    pub step_id: String,
    /// How long to wait for news, 1 to 60 seconds (default 60).
    pub timeout_seconds: Option<i64>,
}

/// Where a login process stands.
#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginProgress", rename_all = "camelCase")]
pub struct LoginProgressObject {
    /// True once the login succeeded (`loginId` and `userInfo` set).
    pub complete: bool,
    /// True when the login process timed out (at the bridge or after `timeout.totalSeconds`);
    /// start a new login.
    pub expired: bool,
    /// The next (or, when nothing changed during a wait, the current) step; null when
    /// complete or expired.
    pub step: Option<LoginStepObject>,
    /// The bridge's id of the new login (`user_login_id`).
    pub login_id: Option<String>,
    /// The new login as recorded (name, profile, state).
    pub user_info: Option<BridgeLogin>,
    pub timeout: LoginTimeout,
}

impl From<LoginUpdate> for LoginProgressObject {
    fn from(u: LoginUpdate) -> Self {
        let timeout = u.timeout.into();
        match u.progress {
            LoginProgress::Step(step) => Self {
                complete: false,
                expired: false,
                step: Some(step.into()),
                login_id: None,
                user_info: None,
                timeout,
            },
            LoginProgress::Complete(c) => Self {
                complete: true,
                expired: false,
                step: None,
                login_id: Some(c.login_id),
                user_info: Some(c.user_info.into()),
                timeout,
            },
            LoginProgress::Expired => Self {
                complete: false,
                expired: true,
                step: None,
                login_id: None,
                user_info: None,
                timeout,
            },
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLogoutRequest", rename_all = "camelCase")]
pub struct LogoutRequest {
    /// The login to log out; omitted: every login on the platform.
    pub login_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeConnectTimeout")]
pub struct ConnectTimeout {
    /// Lifetime of the login process in seconds.
    pub seconds: i64,
    #[oai(rename = "expiresAt")]
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeConnectResult", rename_all = "camelCase")]
pub struct ConnectResult {
    /// `qr` (show `qrCode`, then call `login/wait`), `phone` (the step asks for the phone
    /// number) or `flow` (another flow: follow `step`).
    pub method: String,
    /// The flow that was started.
    pub flow_id: String,
    /// The QR code payload to render, for `qr`.
    pub qr_code: Option<String>,
    pub login_process_id: String,
    pub step_id: String,
    /// The first step, as `login/start` returns it.
    pub step: Option<LoginStepObject>,
    pub timeout: ConnectTimeout,
}

#[derive(ApiResponse)]
pub enum ConnectResponse {
    /// The login was started. Deprecated: use `flows` and `login/start`.
    #[oai(status = 200)]
    Ok(Json<ConnectResult>, #[oai(header = "Deprecation")] String),
}

#[derive(ApiResponse)]
pub enum DisconnectResponse {
    /// Every login was logged out. Deprecated: use `logout`.
    #[oai(status = 200)]
    Ok(Json<MessageResponse>, #[oai(header = "Deprecation")] String),
}

/// The answer to a login start or step: the bridge's next step, or how it ended.
pub(super) fn started(update: LoginUpdate) -> LoginStarted {
    let timeout = update.timeout.into();
    let step = match update.progress {
        LoginProgress::Step(step) => step.into(),
        LoginProgress::Complete(c) => LoginStepObject {
            step_id: String::new(),
            step_type: LoginStep::COMPLETE.to_owned(),
            instructions: String::new(),
            display_and_wait: None,
            user_input: None,
            cookies: None,
            complete: Some(StepComplete {
                user_login_id: c.login_id,
            }),
        },
        LoginProgress::Expired => LoginStepObject {
            step_id: String::new(),
            step_type: "expired".to_owned(),
            instructions: "the login process expired".to_owned(),
            display_and_wait: None,
            user_input: None,
            cookies: None,
            complete: None,
        },
    };
    LoginStarted {
        login_process_id: update.process_id,
        step,
        timeout,
    }
}
