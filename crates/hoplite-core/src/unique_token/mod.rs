//! The `UniqueToken` concept: small integer ids that no two concurrent holders share.
//!
//! A kernel that needs per-thread state (a private accumulator row, a random-number stream)
//! acquires an id in `[0, size)`, uses the slot of that id, and releases it.
//!
//! `concept` holds the traits and the guards; `pool` the host implementation every host
//! backend uses, [`TokenPool`], with the per-thread preference and per-share lease it reads
//! on each acquire.

mod concept;
mod pool;

pub use concept::{TeamTokenGuard, TokenGuard, UniqueToken, UniqueTokenSpace};
pub use pool::{PreferredId, TokenPool, lease_rank_id, prefer_id, return_parked_id};
