//! A program that glob-imports the facade beside rayon's prelude compiles: the facade exports
//! no `rayon` name that would make `rayon::prelude` ambiguous (E0659); its rayon backend is
//! `hoplite::rayon_backend`.

use hoplite::*;
use rayon::prelude::*;

#[test]
fn the_facade_and_rayons_prelude_import_together() {
    let doubled: Vec<u64> = (0..100u64).into_par_iter().map(|x| x * 2).collect();
    let sum =
        parallel_reduce("sum", 100, |i, acc: &mut u64| *acc += 2 * *i as u64, Sum::new()).expect("reduces");
    assert_eq!(doubled.iter().sum::<u64>(), sum);
    assert!(rayon_backend::max_threads() >= 1);
}
