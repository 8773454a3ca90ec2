//! "Starting new chats" (the provisioning API's `snc` tag): contacts, user search,
//! identifier resolution and DM creation. Identifiers go into a URL path: each is
//! percent-encoded as one segment, so no identifier can reach another endpoint.

use reqwest::Method;

use super::types::{ContactList, ResolvedIdentifier, SearchResults};
use super::{BridgeError, ProvisioningClient};

impl ProvisioningClient {
    /// `GET /v3/contacts`: the login's contact list (`M_UNRECOGNIZED` when the network
    /// cannot list contacts).
    pub async fn contacts(&self, user_id: &str) -> Result<Vec<ResolvedIdentifier>, BridgeError> {
        let list: ContactList = self
            .call(Method::GET, "/v3/contacts", user_id, &[], None, None)
            .await?;
        Ok(list.contacts.unwrap_or_default())
    }

    /// `POST /v3/search_users {query}`: users of the remote network matching `query`.
    pub async fn search_users(
        &self,
        user_id: &str,
        query: &str,
    ) -> Result<Vec<ResolvedIdentifier>, BridgeError> {
        let body = serde_json::json!({ "query": query });
        let found: SearchResults = self.post(user_id, "/v3/search_users", &body, None).await?;
        Ok(found.results.unwrap_or_default())
    }

    /// `GET /v3/resolve_identifier/{identifier}`: who a phone number, username, … is
    /// (404 `M_NOT_FOUND` when nobody).
    pub async fn resolve_identifier(
        &self,
        user_id: &str,
        identifier: &str,
    ) -> Result<ResolvedIdentifier, BridgeError> {
        let path = format!(
            "/v3/resolve_identifier/{}",
            self.segment("identifier", identifier)?
        );
        self.call(Method::GET, &path, user_id, &[], None, None)
            .await
    }

    /// `POST /v3/create_dm/{identifier}`: the direct chat's portal room, created when
    /// missing. The flag is true when the bridge created it now (HTTP 201).
    pub async fn create_dm(
        &self,
        user_id: &str,
        identifier: &str,
    ) -> Result<(ResolvedIdentifier, bool), BridgeError> {
        let path = format!("/v3/create_dm/{}", self.segment("identifier", identifier)?);
        let body = serde_json::json!({});
        let (status, dm) = self
            .call_with_status(Method::POST, &path, user_id, &[], Some(&body), None)
            .await?;
        Ok((dm, status == 201))
    }
}
