//! Who the user is: sign-up and sign-in by e-mailed code, sessions, account groups, keys,
//! invitations, linked accounts, and the whole identity journey of a new user.

mod accounts;
mod auth;
mod invites;
mod journey;
mod keys;
mod linked;
mod sessions;
