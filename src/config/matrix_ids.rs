//! Matrix user-ID rules that configuration validation needs, kept here (a leaf) so that
//! `config` does not depend on the clients that also use them.

/// Switchboard's own Matrix users are `@sb_<uuid>`; a ghost prefix must not cover them.
pub const OWN_LOCALPART_PREFIX: &str = "sb_";

/// The server part of a Matrix user ID (`@localpart:server`); `None` when it is not one.
pub fn server_of(user_id: &str) -> Option<&str> {
    let (local, server) = user_id.strip_prefix('@')?.split_once(':')?;
    (!local.is_empty() && !server.is_empty()).then_some(server)
}

/// A usable `ghost_prefix`: localpart characters, not empty, not covering Switchboard's
/// own users.
pub fn check_ghost_prefix(prefix: &str) -> Result<(), String> {
    let valid = !prefix.is_empty()
        && prefix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._=-/".contains(&b));
    if !valid {
        return Err(format!(
            "{prefix:?} must be a non-empty Matrix localpart prefix (a-z 0-9 . _ = - /)"
        ));
    }
    if OWN_LOCALPART_PREFIX.starts_with(prefix) || prefix.starts_with(OWN_LOCALPART_PREFIX) {
        return Err(format!(
            "{prefix:?} would also match Switchboard's own users (@{OWN_LOCALPART_PREFIX}…)"
        ));
    }
    Ok(())
}
