//! The thread registry of a build without the `enabled` feature: no thread records, so
//! a snapshot is the empty profile and no thread has a serial number.

use crate::model::profile::Profile;

/// Copies what every thread has recorded: in this build (no `enabled` feature),
/// nothing.
pub fn snapshot() -> Profile {
    Profile::default()
}

/// The calling thread's serial number: none, since no thread records.
pub(crate) fn current_serial() -> Option<u64> {
    None
}
