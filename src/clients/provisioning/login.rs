//! The login process of a bridge: its flows, starting one, submitting a step (user input or
//! cookies), long-polling a `display_and_wait` step, cancelling, and logging out.

use std::collections::BTreeMap;
use std::time::Duration;

use super::types::{self, LoginFlow, LoginStep};
use super::{BridgeError, ProvisioningClient};

impl ProvisioningClient {
    /// `GET /v3/login/flows`.
    pub async fn login_flows(&self, user_id: &str) -> Result<Vec<LoginFlow>, BridgeError> {
        let flows: types::LoginFlows = self
            .call(
                reqwest::Method::GET,
                "/v3/login/flows",
                user_id,
                &[],
                None,
                None,
            )
            .await?;
        Ok(flows.flows)
    }

    /// `POST /v3/login/start/{flowID}` (`?login_id=` to re-authenticate an existing login).
    pub async fn login_start(
        &self,
        user_id: &str,
        flow_id: &str,
        relogin: Option<&str>,
    ) -> Result<LoginStep, BridgeError> {
        let path = format!("/v3/login/start/{}", self.segment("flowId", flow_id)?);
        let extra: Vec<(&str, &str)> = relogin.map(|l| ("login_id", l)).into_iter().collect();
        let body = serde_json::json!({});
        self.call(
            reqwest::Method::POST,
            &path,
            user_id,
            &extra,
            Some(&body),
            None,
        )
        .await
    }

    /// `POST /v3/login/step/{process}/{step}/{user_input|cookies}` with the field values.
    pub async fn login_submit(
        &self,
        user_id: &str,
        process_id: &str,
        step_id: &str,
        step_type: &str,
        data: &BTreeMap<String, String>,
    ) -> Result<LoginStep, BridgeError> {
        let path = self.step_path(process_id, step_id, step_type)?;
        let body = serde_json::to_value(data).unwrap_or_default();
        self.post(user_id, &path, &body, None).await
    }

    /// `POST /v3/login/step/{process}/{step}/display_and_wait`: long-polls up to `timeout`.
    pub async fn login_wait(
        &self,
        user_id: &str,
        process_id: &str,
        step_id: &str,
        timeout: Duration,
    ) -> Result<LoginStep, BridgeError> {
        let path = self.step_path(process_id, step_id, LoginStep::DISPLAY_AND_WAIT)?;
        self.post(user_id, &path, &serde_json::json!({}), Some(timeout))
            .await
    }

    /// `POST /v3/logout/{loginID}`; `None` logs out every login (`all`).
    pub async fn logout(&self, user_id: &str, login_id: Option<&str>) -> Result<(), BridgeError> {
        let path = format!(
            "/v3/logout/{}",
            self.segment("loginId", login_id.unwrap_or("all"))?
        );
        self.post_empty(user_id, &path).await
    }

    /// `POST /v3/login/cancel/{process}` (bridges from mautrix-go v0.28.1).
    pub async fn login_cancel(&self, user_id: &str, process_id: &str) -> Result<(), BridgeError> {
        let path = format!(
            "/v3/login/cancel/{}",
            self.segment("loginProcessId", process_id)?
        );
        self.post_empty(user_id, &path).await
    }

    fn step_path(
        &self,
        process_id: &str,
        step_id: &str,
        step_type: &str,
    ) -> Result<String, BridgeError> {
        Ok(format!(
            "/v3/login/step/{}/{}/{}",
            self.segment("loginProcessId", process_id)?,
            self.segment("stepId", step_id)?,
            self.segment("stepType", step_type)?
        ))
    }
}
