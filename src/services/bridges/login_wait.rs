//! Waiting on a `display_and_wait` login step (a QR code to scan, a code to confirm on
//! the phone): one background long-poll to the bridge per process, any number of client
//! waits on it, each answered by the next change or at its own timeout.

use super::login::{find_process, finish_login};
use super::*;
use crate::error::ErrorCode;

/// Waits up to `wait` (at most [`WAIT_MAX`]) for the `display_and_wait` step `step_id`
/// to move on: a new step (e.g. a refreshed QR code), the completed login, or expiry.
/// Without news it answers the current step again.
pub async fn wait_step(
    state: &Context,
    user_id: &str,
    platform: Platform,
    process_id: &str,
    step_id: &str,
    wait: Duration,
) -> AppResult<LoginUpdate> {
    validate_id("stepId", step_id)?;
    let client = state.bridges.clients.get(platform)?.clone();
    let process = find_process(state, user_id, platform, process_id).await?;
    let mut changed = process.changed.subscribe();
    if let Some(answer) = answer_now_or_start_polling(state, client, &process, step_id) {
        return answer;
    }
    let wait = wait.min(WAIT_MAX);
    let remaining = Duration::from_secs(process.timeout().remaining_seconds.max(0) as u64);
    let _ = tokio::time::timeout(wait.min(remaining), changed.changed()).await;
    let mut s = process.lock();
    if let Some(settled) = process.settled(&mut s) {
        return Ok(process.update(settled?));
    }
    if s.polling.is_none() {
        if let Some(e) = s.poll_error.clone() {
            return Err(bridge_error(e, ErrorCode::LoginProcessNotFound));
        }
    }
    let step = s.step.clone();
    drop(s);
    Ok(process.update(LoginProgress::Step(step)))
}

/// Before waiting: the answer when there is one already (settled, a step not yet seen,
/// a wrong step id); otherwise `None`, the background long-poll of `step_id` running
/// (started here when it is not yet).
fn answer_now_or_start_polling(
    state: &Context,
    client: crate::clients::provisioning::ProvisioningClient,
    process: &Arc<Process>,
    step_id: &str,
) -> Option<AppResult<LoginUpdate>> {
    let mut s = process.lock();
    if let Some(settled) = process.settled(&mut s) {
        return Some(settled.map(|p| process.update(p)));
    }
    match &s.polling {
        Some(polling) if polling == step_id => None,
        Some(polling) => Some(Err(AppError::bad_request(
            ErrorCode::InvalidStep,
            format!("stepId: the process is waiting on step {polling:?}, not {step_id:?}"),
        ))),
        None if s.unseen => {
            s.unseen = false;
            let step = s.step.clone();
            Some(Ok(process.update(LoginProgress::Step(step))))
        }
        None if s.step.step_type != LoginStep::DISPLAY_AND_WAIT || s.step.step_id != step_id => {
            Some(Err(not_a_step_to_wait_on(&s.step)))
        }
        None => {
            s.polling = Some(step_id.to_owned());
            s.poll_error = None;
            let remaining = Duration::from_secs(process.timeout().remaining_seconds.max(1) as u64);
            tokio::spawn(long_poll(
                state.clone(),
                client,
                process.clone(),
                step_id.to_owned(),
                remaining.min(BRIDGE_LONG_POLL_CAP),
            ));
            None
        }
    }
}

/// 400 for a wait on a step that is not the current `display_and_wait` step.
fn not_a_step_to_wait_on(step: &LoginStep) -> AppError {
    AppError::bad_request(
        ErrorCode::InvalidStep,
        format!(
            "stepId: the current step is {:?} of type {}; {}",
            step.step_id,
            step.step_type,
            if step.step_type == LoginStep::DISPLAY_AND_WAIT {
                "wait on that step id"
            } else {
                "submit it with POST /login/step"
            }
        ),
    )
}

/// The background `display_and_wait` long-poll of one process.
async fn long_poll(
    state: Context,
    client: crate::clients::provisioning::ProvisioningClient,
    process: Arc<Process>,
    step_id: String,
    timeout: Duration,
) {
    let result = client
        .login_wait(&process.mxid, &process.id, &step_id, timeout)
        .await;
    match &result {
        Ok(step) => {
            tracing::debug!(platform = process.platform.id(), step = %step.step_id, kind = %step.step_type, "bridge login long-poll answered")
        }
        Err(e) => {
            tracing::info!(platform = process.platform.id(), error = %e, "bridge login long-poll failed")
        }
    }
    let completion = match &result {
        Ok(step) => match step.completed_login_id() {
            Some(login_id) => Some(finish_login(&state, &process, login_id).await),
            None => None,
        },
        Err(_) => None,
    };
    {
        let mut s = process.lock();
        s.polling = None;
        match result {
            Ok(step) => {
                s.step = step;
                s.completion = completion;
                s.unseen = process.changed.receiver_count() == 0;
            }
            Err(e) => match e.failure() {
                Failure::Expired => process.mark_expired(&mut s),
                // No news within the cap: the next wait polls again.
                _ if matches!(e, BridgeError::Timeout { .. }) => {}
                Failure::Unavailable | Failure::Upstream => s.poll_error = Some(e),
                _ => s.failure = Some(e),
            },
        }
    }
    process.changed.send_modify(|n| *n += 1);
}
