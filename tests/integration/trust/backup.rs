//! Key backup: room keys reach Synapse's backup, a lost crypto store restores from it,
//! the recovery key opens secret storage once (then 409; a reset makes a new backup), and
//! `DELETE /api/keys` deletes the backup on Synapse.
