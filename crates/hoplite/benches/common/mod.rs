//! What the benchmark targets share.

use hoplite::RayonSpace;
use hoplite::prelude::*;

/// A hand-written rayon pool with as many threads as `space`: the baseline's pool.
pub fn raw_pool(space: &RayonSpace) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(space.concurrency())
        .build()
        .expect("a rayon pool")
}
