//! Hardening of stored data: tables that would only grow (purge, caps), data that must
//! really go (`DELETE /api/keys`), user-row writes that must not revert each other, error
//! messages without internal addresses, and the `log` mail transport.

mod caps;
mod mail_log;
mod purge;
mod races;
mod shredding;
mod upstream;
