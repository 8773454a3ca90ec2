//! Interactive bridge logins: flows, start, steps (waits: [`super::login_wait`]), and the
//! deprecated `connect` that picks a flow itself.

use super::*;
use crate::error::ErrorCode;

/// The bridge's login flows.
pub async fn flows(
    state: &Context,
    user_id: &str,
    platform: Platform,
) -> AppResult<Vec<LoginFlow>> {
    let client = state.bridges.clients.get(platform)?;
    let (_, mxid) = acting_user(state, user_id).await?;
    Ok(client.login_flows(&mxid).await?)
}

/// Starts a login with `flow_id` (re-authenticating `relogin` when given). At most
/// [`LOGIN_RATE_LIMIT`] starts per user per [`LOGIN_RATE_WINDOW`] (429).
pub async fn start_login(
    state: &Context,
    user_id: &str,
    platform: Platform,
    flow_id: &str,
    relogin: Option<&str>,
) -> AppResult<LoginUpdate> {
    validate_id("flowId", flow_id)?;
    if let Some(l) = relogin {
        validate_id("loginId", l)?;
    }
    let client = state.bridges.clients.get(platform)?.clone();
    spend_a_login_start(state, user_id).await?;
    let (user, mxid) = acting_user(state, user_id).await?;
    check_flow_is_offered(state, &user, &mxid, platform, flow_id).await?;
    let step = client
        .login_start(&mxid, flow_id, relogin)
        .await
        .map_err(|e| bridge_error(e, ErrorCode::LoginNotFound))?;
    if step.login_id.is_empty() {
        return Err(AppError::BadGateway {
            code: ErrorCode::BridgeError,
            message: format!(
                "the {} bridge started a login without a process id",
                platform.name()
            ),
        });
    }
    let process = Arc::new(new_process(user_id, platform, mxid, step.clone()));
    state
        .bridges
        .processes
        .insert(
            (user_id.to_owned(), platform, process.id.clone()),
            process.clone(),
        )
        .await;
    advance(state, &process, step).await
}

/// Counts a login start against the user's [`LOGIN_RATE_LIMIT`] (429 past it).
async fn spend_a_login_start(state: &Context, user_id: &str) -> AppResult<()> {
    let key = format!("bridge-login:{user_id}");
    let Err(quota) = state
        .limiter
        .hit(&key, LOGIN_RATE_LIMIT, LOGIN_RATE_WINDOW)
        .await
    else {
        return Ok(());
    };
    Err(AppError::TooManyRequests {
        code: ErrorCode::RateLimited,
        message: format!(
            "at most {LOGIN_RATE_LIMIT} bridge logins can be started per 10 minutes; retry in {} s",
            quota.retry_after()
        ),
        retry_after_secs: Some(quota.retry_after()),
    })
}

/// A flow the bridge does not list is refused here, with the flows it has, before the
/// bridge is asked (a bridge that lists none is asked anyway).
async fn check_flow_is_offered(
    state: &Context,
    user: &UserRow,
    mxid: &str,
    platform: Platform,
    flow_id: &str,
) -> AppResult<()> {
    let snap = snapshot(state, user, mxid, platform, false).await;
    let whoami = snap
        .result
        .as_ref()
        .map_err(|e| AppError::from(e.clone()))?;
    if whoami.login_flows.is_empty() || whoami.login_flows.iter().any(|f| f.id == flow_id) {
        return Ok(());
    }
    let ids: Vec<&str> = whoami.login_flows.iter().map(|f| f.id.as_str()).collect();
    Err(AppError::bad_request(
        ErrorCode::InvalidFlow,
        format!(
            "flowId: the {} bridge has no flow {flow_id:?}; its flows are {}",
            platform.name(),
            ids.join(", ")
        ),
    ))
}

/// A login process at its first step, living [`LOGIN_PROCESS_TTL`] from now.
fn new_process(user_id: &str, platform: Platform, mxid: String, step: LoginStep) -> Process {
    let now = unix_now() as i64;
    Process {
        user_id: user_id.to_owned(),
        platform,
        id: step.login_id.clone(),
        mxid,
        started_at: now,
        expires_at: now + LOGIN_PROCESS_TTL.as_secs() as i64,
        expired_at: AtomicI64::new(0),
        state: Mutex::new(ProcState {
            step,
            completion: None,
            failure: None,
            expired: false,
            polling: None,
            poll_error: None,
            unseen: false,
        }),
        changed: watch::channel(0).0,
    }
}

/// Records a step the bridge returned; completes the login when it is the last.
async fn advance(state: &Context, process: &Process, step: LoginStep) -> AppResult<LoginUpdate> {
    if let Some(login_id) = step.completed_login_id() {
        let completion = finish_login(state, process, login_id).await;
        let mut s = process.lock();
        s.step = step;
        s.completion = Some(completion.clone());
        return Ok(process.update(LoginProgress::Complete(completion)));
    }
    process.lock().step = step.clone();
    Ok(process.update(LoginProgress::Step(step)))
}

/// After the bridge completed a login: reads whoami afresh (recording the new login and
/// publishing its state) and returns the login's info.
pub(super) async fn finish_login(state: &Context, process: &Process, login_id: &str) -> Completion {
    let platform = process.platform;
    let info = async {
        let user = users::load(state, &process.user_id).await?;
        let snap = snapshot(state, &user, &process.mxid, platform, true).await;
        let mut found = stored_logins(state, &user, platform)
            .await?
            .into_iter()
            .find(|l| l.id == login_id);
        if found.is_none() {
            // The bridge did not list it (yet): record what is known.
            if let Err(e) = &snap.result {
                tracing::warn!(platform = platform.id(), error = %e, "whoami after a login failed");
            }
            let observed = vec![Observed {
                login_id: login_id.to_owned(),
                remote_name: String::new(),
                remote_profile: serde_json::Map::new(),
                state_event: String::new(),
                error_code: None,
                error: None,
                state_ts: None,
            }];
            reconcile(state, &user, platform, observed, false).await?;
            found = stored_logins(state, &user, platform)
                .await?
                .into_iter()
                .find(|l| l.id == login_id);
        }
        Ok::<_, AppError>(found)
    }
    .await;
    let user_info = match info {
        Ok(Some(info)) => info,
        other => {
            if let Err(e) = other {
                tracing::warn!(platform = platform.id(), error = %e, "could not record the new bridge login");
            }
            LoginInfo {
                id: login_id.to_owned(),
                remote_name: None,
                remote_profile: Default::default(),
                logged_in: true,
                state_event: String::new(),
                error: None,
                error_code: None,
                updated_at: unix_now() as i64,
            }
        }
    };
    Completion {
        login_id: login_id.to_owned(),
        user_info,
    }
}

pub(super) async fn find_process(
    state: &Context,
    user_id: &str,
    platform: Platform,
    process_id: &str,
) -> AppResult<Arc<Process>> {
    validate_id("loginProcessId", process_id)?;
    state
        .bridges
        .processes
        .get(&(user_id.to_owned(), platform, process_id.to_owned()))
        .await
        .ok_or_else(|| AppError::NotFound {
            code: ErrorCode::LoginProcessNotFound,
            message: "unknown or expired login process; start a new login".into(),
        })
}

/// Submits a `user_input` or `cookies` step.
pub async fn submit_step(
    state: &Context,
    user_id: &str,
    platform: Platform,
    process_id: &str,
    step_id: &str,
    step_type: &str,
    data: &BTreeMap<String, String>,
) -> AppResult<LoginUpdate> {
    if step_type != LoginStep::USER_INPUT && step_type != LoginStep::COOKIES {
        return Err(AppError::invalid(
            "stepType",
            "must be user_input or cookies",
        ));
    }
    validate_id("stepId", step_id)?;
    let client = state.bridges.clients.get(platform)?.clone();
    let process = find_process(state, user_id, platform, process_id).await?;
    if let Some(settled) = process.settled(&mut process.lock()) {
        return match settled? {
            LoginProgress::Expired => Err(AppError::bad_request(
                ErrorCode::LoginExpired,
                "the login process timed out; start a new login",
            )),
            done => Ok(process.update(done)),
        };
    }
    match client
        .login_submit(&process.mxid, &process.id, step_id, step_type, data)
        .await
    {
        Ok(step) => advance(state, &process, step).await,
        Err(e) => {
            if e.failure() == Failure::Expired {
                process.mark_expired(&mut process.lock());
            }
            Err(bridge_error(e, ErrorCode::LoginProcessNotFound))
        }
    }
}

/// How the deprecated `connect` logs in.
#[derive(Debug, Clone)]
pub struct Connected {
    /// `qr`, `phone` or `flow`.
    pub method: &'static str,
    pub flow_id: String,
    pub update: LoginUpdate,
}

/// The flow `connect` picks: the QR flow for WhatsApp, the phone flow for Telegram, else
/// (and when the preferred one is missing) the bridge's first flow.
pub fn pick_flow(platform: Platform, flows: &[LoginFlow]) -> Option<&LoginFlow> {
    let preferred = match platform {
        Platform::Whatsapp => Some("qr"),
        Platform::Telegram => Some("phone"),
        Platform::Discord => None,
    };
    preferred
        .and_then(|p| flows.iter().find(|f| f.id.to_ascii_lowercase().contains(p)))
        .or_else(|| flows.first())
}

/// Deprecated one-call login: picks a flow and starts it.
pub async fn connect(state: &Context, user_id: &str, platform: Platform) -> AppResult<Connected> {
    let flows = flows(state, user_id, platform).await?;
    let flow = pick_flow(platform, &flows)
        .cloned()
        .ok_or_else(|| AppError::BadGateway {
            code: ErrorCode::BridgeError,
            message: format!("the {} bridge offers no login flows", platform.name()),
        })?;
    let update = start_login(state, user_id, platform, &flow.id, None).await?;
    let is_qr = matches!(&update.progress, LoginProgress::Step(s) if s.display().is_some_and(|(t, _)| t == "qr"));
    let method = if is_qr {
        "qr"
    } else if flow.id.to_ascii_lowercase().contains("phone") {
        "phone"
    } else {
        "flow"
    };
    Ok(Connected {
        method,
        flow_id: flow.id,
        update,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: &str) -> LoginFlow {
        LoginFlow {
            id: id.into(),
            name: id.into(),
            description: String::new(),
        }
    }

    #[test]
    fn connect_prefers_qr_on_whatsapp_phone_on_telegram_else_the_first_flow() {
        let flows = [flow("phone"), flow("qr")];
        assert_eq!(pick_flow(Platform::Whatsapp, &flows).unwrap().id, "qr");
        assert_eq!(pick_flow(Platform::Telegram, &flows).unwrap().id, "phone");
        assert_eq!(pick_flow(Platform::Discord, &flows).unwrap().id, "phone");
        assert_eq!(
            pick_flow(Platform::Telegram, &[flow("bot")]).unwrap().id,
            "bot"
        );
        assert!(pick_flow(Platform::Whatsapp, &[]).is_none());
    }

    #[test]
    fn platform_values_outside_the_three_are_invalid() {
        assert_eq!(
            parse_platform("signal").unwrap_err().code(),
            "invalid_platform"
        );
        assert_eq!(parse_platform("telegram").unwrap(), Platform::Telegram);
    }
}
