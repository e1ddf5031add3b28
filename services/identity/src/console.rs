//! Sign-in to the web console through the same federation as an MCP client's: a flow that
//! starts here rather than at `/authorize` (the console is this server, not a client that
//! registered), goes to the tenant's identity provider by home-realm discovery on the person's
//! email, comes back to the same callback, and ends in no code and no consent: the gateway
//! starts a console session for the person with what their groups allow.

use uuid::Uuid;

use crate::authorize::Refusal;
use crate::flow::{self, Flow};
use crate::{Identity, IdentityError};

pub use crate::flow::CONSOLE_CLIENT_ID;
/// Where a console flow's refusal comes back, as an OAuth client's would
/// (`?error=...&error_description=...`): the console's sign-in page, which says why.
pub const CONSOLE_PATH: &str = "/console/sign-in";

/// Who signed in to the console, and what they may do there.
#[derive(Debug, Clone)]
pub struct ConsoleSignIn {
    pub tenant: Uuid,
    pub principal: Uuid,
    pub name: String,
    pub scopes: Vec<String>,
}

impl Identity {
    /// Starts a console sign-in asking for `scopes` (every scope this server knows: the
    /// person's groups decide which they get). Answers the flow and the secret its browser
    /// keeps, as [`Identity::begin`] does.
    pub async fn begin_console(&self, issuer: &str, scopes: Vec<String>) -> Result<(Flow, String), IdentityError> {
        let secret = flow::new_id();
        let flow = Flow {
            id: flow::new_id(),
            browser_key: flow::browser_key(&secret),
            issuer: issuer.to_string(),
            client_id: CONSOLE_CLIENT_ID.to_string(),
            client_name: Some("obsidian-tc console".to_string()),
            redirect_uri: format!("{issuer}{CONSOLE_PATH}"),
            state: None,
            code_challenge: String::new(),
            scope: Some(scopes),
            resource: issuer.to_string(),
            tenant: None,
            tenant_name: None,
            idp: None,
            user: None,
        };
        flow::save(&self.kv, &flow, self.settings.flow_ttl).await?;
        Ok((flow, secret))
    }

    /// Ends a console flow the provider vouched for (once: a second use answers expired).
    pub async fn finish_console(&self, flow: Flow) -> Result<ConsoleSignIn, Refusal> {
        let (Some(tenant), Some(user)) = (flow.tenant, flow.user.clone()) else {
            return Err(Refusal::page("Sign in first", "This request has no signed-in person yet."));
        };
        if !flow.is_console() {
            return Err(Refusal::page("Start again", "This sign-in was not started by the console."));
        }
        if !flow::finish(&self.kv, &flow).await? {
            return Err(Refusal::page("This sign-in has expired", "Start again from the console's sign-in page."));
        }
        Ok(ConsoleSignIn { tenant, principal: user.principal_id, name: user.name, scopes: user.scopes })
    }
}
