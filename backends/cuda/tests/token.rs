//! Unique tokens in `#[kernel]` launches through the one launch API (`parallel_for` with the
//! token in the kernel's `with`). Without a driver (or a GPU) the constructors return
//! typed errors and the test says the GPU part is skipped; on a GPU it launches a histogram
//! with per-id rows and a team kernel whose threads contend for a few ids, and checks the
//! counts, that no two threads held one id at once, and that every id is free afterwards.

use hoplite::prelude::*;
use hoplite::{BoundReader, BoundTeamSlots, kernel};
use hoplite_core::BoundAtomic;
use hoplite_core::{LayoutRight, RangePolicy, View, parallel_for};
use hoplite_cuda::device_token_size;
use hoplite_cuda::{Cuda, CudaError, CudaSpace};

/// A histogram with one private row of `nbins` counters per token id.
#[kernel]
pub fn token_rows(
    i: Idx<'_>,
    rows: BoundAtomic<'_, u64, 1>,
    x: BoundReader<'_, u32, 1>,
    tokens: &impl UniqueToken,
    nbins: usize,
) {
    let id = tokens.guard();
    rows.fetch_add(*id * nbins + x.get(i) as usize % nbins, 1);
}

/// Each thread takes an id `rounds` times and counts a clash when the id already had an owner.
#[kernel]
pub fn team_claims(
    m: &impl TeamMember,
    owners: BoundAtomic<'_, i64, 1>,
    clashes: BoundAtomic<'_, u64, 1>,
    tokens: &impl UniqueToken,
    rounds: usize,
) {
    // Odd ranks take one more round, so the threads of a warp do not stay in step.
    for _ in 0..rounds + m.team_rank() % 2 {
        let id = tokens.acquire();
        if owners.fetch_add(id, 1) != 0 {
            clashes.fetch_add(0, 1);
        }
        owners.fetch_add(id, -1);
        tokens.release(id);
    }
}

/// One id per team: every thread stores its team's id in its slot.
#[kernel]
pub fn team_ids(m: &impl TeamMember, ids: BoundTeamSlots<'_, u64>, tokens: &impl UniqueToken) {
    let id = tokens.team_guard(m);
    ids.set(m.team_slot(), *id as u64);
}

fn is_absence(e: &CudaError) -> bool {
    matches!(
        e,
        CudaError::NoDriver { .. } | CudaError::NoDevice | CudaError::DriverTooOld { .. }
    )
}

type Device<T> = View<T, 1, LayoutRight, CudaSpace>;

#[test]
fn tokens_on_the_device() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let cuda = match Cuda::new() {
        Ok(cuda) => cuda,
        Err(e) => {
            assert!(is_absence(&e), "{e}");
            let default = Cuda::default();
            let token = default.unique_token().expect_err("no device");
            assert_eq!(token, e);
            assert_eq!(default.unique_token_with_size(64).expect_err("no device"), e);
            assert!(matches!(
                default.unique_token_with_size(0),
                Err(CudaError::InvalidToken { size: 0, .. })
            ));
            println!("skipped the GPU part: {e}");
            return Ok(());
        }
    };
    let tokens = cuda.unique_token()?;
    assert_eq!(tokens.size(), device_token_size(&cuda.limits()?));
    assert_eq!(tokens.live()?, 0);

    // A histogram with a row per id: the column sums are the plain histogram.
    let (n, nbins, size) = (100_000usize, 7usize, 1000usize);
    let small = cuda.unique_token_with_size(size)?;
    let x: Vec<u32> = (0..n as u32).map(|k| k.wrapping_mul(2_654_435_761)).collect();
    let xd = Device::<u32>::from_slice("x", [n], &x)?;
    let rows = Device::<u64>::new("rows", [size * nbins])?;
    parallel_for(
        "token rows",
        (RangePolicy::new(cuda.clone(), 0..n), (rows.atomic(), xd.read())),
        token_rows::with(&small, nbins),
    )?;
    let host = rows.to_vec()?;
    let mut expected = vec![0u64; nbins];
    for &v in &x {
        expected[v as usize % nbins] += 1;
    }
    let per_bin: Vec<u64> = (0..nbins)
        .map(|b| (0..size).map(|id| host[id * nbins + b]).sum())
        .collect();
    assert_eq!(per_bin, expected);
    assert_eq!(small.live()?, 0, "every id is free after the launch");

    // Many threads, three ids: no id ever has two holders.
    let few = cuda.unique_token_with_size(3)?;
    let owners = Device::<i64>::new("owners", [3])?;
    let clashes = Device::<u64>::new("clashes", [1])?;
    parallel_for(
        "team claims",
        (
            TeamPolicy::new(cuda.clone(), 64, TeamSize::Fixed(128)),
            (owners.atomic(), clashes.atomic()),
        ),
        team_claims::with::<Cuda>(&few, 20),
    )?;
    assert_eq!(clashes.to_vec()?, [0]);
    assert_eq!(owners.to_vec()?, [0; 3]);
    assert_eq!(few.live()?, 0);

    // One id per team, the same on every thread of it.
    let (league, team) = (40usize, 64usize);
    let slots = View::<u64, 2, LayoutRight, CudaSpace>::new("ids", [league, team])?;
    parallel_for(
        "team ids",
        (
            TeamPolicy::new(cuda.clone(), league, TeamSize::Fixed(team)),
            (slots.team_slots(),),
        ),
        team_ids::with::<Cuda>(&few),
    )?;
    let ids = slots.to_vec()?;
    for (l, row) in ids.chunks(team).enumerate() {
        assert!(row[0] < 3, "team {l} got id {}", row[0]);
        assert!(
            row.iter().all(|&id| id == row[0]),
            "team {l} saw two ids: {row:?}"
        );
    }
    assert_eq!(few.live()?, 0);

    // A token of another GPU is refused before the launch.
    if hoplite_cuda::device_count()? > 1 {
        let other = Cuda::on_device(1)?.unique_token_with_size(8)?;
        let e = parallel_for(
            "token of GPU 1",
            (RangePolicy::new(cuda.clone(), 0..n), (rows.atomic(), xd.read())),
            token_rows::with(&other, nbins),
        )
        .expect_err("device 1's token on device 0");
        assert!(e.to_string().contains("CUDA device 1"), "{e}");
    }
    Ok(())
}
