//! The rayon backend runs the whole conformance suite: on the default instance (every core of
//! the machine) and on a pool of three threads, which exercises uneven splits and teams of more
//! than one thread on a machine of any size.

use hoplite_rayon::RayonSpace;

hoplite_conformance::suite!(rayon_default, RayonSpace::default, RayonSpace);

hoplite_conformance::suite!(
    rayon_three_threads,
    || {
        // A fixed pool shared by every check of this module, so the suite does not start
        // threads per test.
        static POOL: std::sync::OnceLock<RayonSpace> = std::sync::OnceLock::new();
        POOL.get_or_init(|| RayonSpace::with_threads(3).expect("a pool of three threads"))
            .clone()
    },
    RayonSpace
);
