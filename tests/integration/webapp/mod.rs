//! The web app's server side (issue #22; docs/design.md): its files at `/`, the web session
//! (refresh token in an HttpOnly cookie) and `sealedMeta` on native room objects; the app
//! itself in Chromium (browser.rs).

pub(crate) mod browser;
mod meta;
mod pwa;
mod serving;
mod session;
