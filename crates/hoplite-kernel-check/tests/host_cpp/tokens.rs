//! Unique tokens on the device: ids acquired and released on every path, never shared by
//! concurrent holders, held across a reduction, one per team.

use super::*;

/// The lock words of a token of `size` ids, all free.
fn token_words(size: usize) -> Vec<u32> {
    vec![0; size.div_ceil(32)]
}

/// The host arrays of a token-claims kernel (`token_claims`, `team_token_claims`): each id's
/// owner, the clash count, each id's uses, and the token's words.
struct Claims {
    size: usize,
    owners: Vec<i64>,
    clashes: Vec<u64>,
    uses: Vec<u64>,
    words: Vec<u32>,
}

impl Claims {
    /// Nothing claimed, every id of a token of `size` free.
    fn new(size: usize) -> Self {
        Claims {
            size,
            owners: vec![0; size],
            clashes: vec![0],
            uses: vec![0; size],
            words: token_words(size),
        }
    }

    /// The kernel's array arguments, in its parameter order.
    fn args(&mut self) -> [HostArray<'_>; 4] {
        [
            HostArray::new(&mut self.owners, &[self.size]),
            HostArray::new(&mut self.clashes, &[1]),
            HostArray::new(&mut self.uses, &[self.size]),
            HostArray::token(&mut self.words, self.size),
        ]
    }
}

#[test]
fn token_histogram_rows_match_the_native_kernel() -> Result<()> {
    let Some(m) = module::<token_histogram>() else {
        return Ok(());
    };
    let (n, nbins, size) = (1000, 7, 5);
    let x: Vec<u32> = (0..n as u32).map(|k| k.wrapping_mul(2_654_435_761)).collect();
    let xv = view("x", [n], &x)?;
    let space = RayonSpace::default();
    let tokens = space.unique_token_with_size(size)?;
    let native = View::<u64, 1>::new("rows", [size * nbins])?;
    parallel_for(
        "token histogram",
        (RangePolicy::new(space, 0..n), (native.atomic(), xv.read())),
        token_histogram::with(&tokens, nbins),
    )?;
    let mut host = vec![0u64; size * nbins];
    let mut hx = x.clone();
    let mut words = token_words(size);
    run_for(
        &m,
        GRID_1D,
        &[0],
        &[n],
        &mut [
            HostArray::new(&mut host, &[size * nbins]),
            HostArray::new(&mut hx, &[n]),
            HostArray::token(&mut words, size),
        ],
        &[Value::Usize(nbins)],
    );
    assert_eq!(words, token_words(size), "every id is free after the launch");
    // The host check runs its threads one by one: each finds the id of its own number free.
    let threads = GRID_1D.thread_count();
    let mut expected = vec![0u64; size * nbins];
    for (k, &v) in x.iter().enumerate() {
        expected[(k % threads) % size * nbins + v as usize % nbins] += 1;
    }
    assert_eq!(host, expected);
    // Which id an iteration gets depends on the schedule; every bin's total does not.
    let per_bin = |rows: &[u64]| -> Vec<u64> {
        (0..nbins)
            .map(|b| (0..size).map(|id| rows[id * nbins + b]).sum())
            .collect()
    };
    assert_eq!(per_bin(&native.to_vec()?), per_bin(&host));
    assert_eq!(host.iter().sum::<u64>(), n as u64);
    Ok(())
}

#[test]
fn acquired_ids_are_released_on_every_path() -> Result<()> {
    let Some(m) = module::<token_claims>() else {
        return Ok(());
    };
    let (n, size, skip) = (500, 3, 4);
    let space = RayonSpace::default();
    let tokens = space.unique_token_with_size(size)?;
    let (owners, clashes, uses) = (
        View::<i64, 1>::new("owners", [size])?,
        View::<u64, 1>::new("clashes", [1])?,
        View::<u64, 1>::new("uses", [size])?,
    );
    parallel_for(
        "claims",
        (
            RangePolicy::new(space, 0..n),
            (owners.atomic(), clashes.atomic(), uses.atomic()),
        ),
        token_claims::with(&tokens, skip),
    )?;
    assert_eq!(clashes.to_vec()?, [0]);
    assert_eq!(uses.to_vec()?.iter().sum::<u64>(), n as u64);
    assert_eq!(
        tokens.try_acquire().map(|id| tokens.release(id)),
        Some(()),
        "the host pool is whole"
    );

    let mut claims = Claims::new(size);
    run_for(&m, GRID_1D, &[0], &[n], &mut claims.args(), &[Value::Usize(skip)]);
    // The early `return` released its id, or the next thread of the same number would have
    // found every id held and waited forever.
    let Claims {
        owners: ho,
        clashes: hc,
        uses: hu,
        words,
        ..
    } = claims;
    assert_eq!(words, token_words(size));
    assert_eq!((ho, hc), (vec![0; size], vec![0]));
    let threads = GRID_1D.thread_count();
    let mut expected = vec![0u64; size];
    for k in 0..n {
        expected[(k % threads) % size] += 1;
    }
    assert_eq!(hu, expected);
    Ok(())
}

#[test]
fn concurrent_holders_never_share_an_id() -> Result<()> {
    let Some(m) = module::<team_token_claims>() else {
        return Ok(());
    };
    let (league, rounds) = (6, 40);
    // Few ids for many threads at once: most acquires find their first choice taken.
    for (team, size) in [(16usize, 3usize), (24, 7), (8, 40)] {
        let mut claims = Claims::new(size);
        let outcome = m
            .launch_team_for(
                team_grid(2, team),
                league,
                &mut claims.args(),
                &[Value::Usize(rounds)],
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        let Claims {
            owners: ho,
            clashes: hc,
            uses: hu,
            words,
            ..
        } = claims;
        assert_eq!(
            hc,
            [0],
            "two threads held one id at once (team {team}, {size} ids)"
        );
        assert_eq!(ho, vec![0; size]);
        assert_eq!(words, token_words(size), "every id is free after the launch");
        assert_eq!(hu.iter().sum::<u64>(), (league * team * rounds) as u64);
        assert!(hu.iter().all(|&u| u < (league * team * rounds) as u64));
        if team > size {
            assert!(hu.iter().all(|&u| u > 0), "every id was handed out: {hu:?}");
        }
    }
    // The native kernel on the rayon backend keeps the same promise.
    let space = RayonSpace::default();
    let size = 2;
    let tokens = space.unique_token_with_size(size)?;
    let policy = TeamPolicy::new(space, league, TeamSize::Auto);
    let team = policy.team_size();
    let (owners, clashes, uses) = (
        View::<i64, 1>::new("owners", [size])?,
        View::<u64, 1>::new("clashes", [1])?,
        View::<u64, 1>::new("uses", [size])?,
    );
    parallel_for(
        "team claims",
        (policy, (owners.atomic(), clashes.atomic(), uses.atomic())),
        team_token_claims::with::<RayonSpace>(&tokens, rounds),
    )?;
    assert_eq!(clashes.to_vec()?, [0]);
    assert_eq!(
        uses.to_vec()?.iter().sum::<u64>(),
        (league * team * rounds) as u64
    );
    Ok(())
}

#[test]
fn a_reduction_holds_ids_between_its_captures_and_its_accumulator() -> Result<()> {
    let Some(m) = module::<token_sum>() else {
        return Ok(());
    };
    let (n, size, bonus) = (300, 4, 1000);
    let x: Vec<i64> = (0..n as i64).map(|k| k * 7 - 500).collect();
    let xv = view("x", [n], &x)?;
    let space = Serial::default();
    let tokens = space.unique_token_with_size(size)?;
    let native = parallel_reduce(
        "token sum",
        (RangePolicy::new(space, 0..n), (xv.read(),)),
        token_sum::with(&tokens, bonus),
        Sum::<i64>::new(),
    )?;
    assert_eq!(native, x.iter().sum::<i64>() + bonus * n as i64);
    let mut hx = x.clone();
    let mut words = token_words(size);
    let (outcome, partials) = m
        .launch_reduce(
            GRID_1D,
            &[0],
            &[n],
            &mut [HostArray::new(&mut hx, &[n]), HostArray::token(&mut words, size)],
            &[Value::I64(bonus)],
            Value::I64(0),
        )
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
    let device: i64 = partials
        .iter()
        .map(|p| match p {
            Value::I64(v) => *v,
            other => panic!("unexpected partial {other:?}"),
        })
        .sum();
    assert_eq!(device, native);
    assert_eq!(words, token_words(size));
    Ok(())
}

/// Every row of `slots` (one per team) holds one value, below `size`.
fn one_id_per_team(slots: &[u64], team: usize, size: usize) {
    for row in slots.chunks(team) {
        assert!(row.iter().all(|&id| id == row[0]), "a team saw two ids: {row:?}");
        assert!((row[0] as usize) < size, "id {} of a token of {size}", row[0]);
    }
}

#[test]
fn a_team_shares_one_id() -> Result<()> {
    let Some(m) = module::<team_token_slots>() else {
        return Ok(());
    };
    let (league, size) = (7, 3);
    for team in [1usize, 4, 9] {
        let (mut slots, mut uses) = (vec![u64::MAX; league * team], vec![0u64; size]);
        let mut words = token_words(size);
        let outcome = m
            .launch_team_for(
                team_grid(2, team),
                league,
                &mut [
                    HostArray::new(&mut slots, &[league, team]),
                    HostArray::new(&mut uses, &[size]),
                    HostArray::token(&mut words, size),
                ],
                &[],
            )
            .expect("arguments match");
        assert_eq!(outcome, Outcome::Completed);
        one_id_per_team(&slots, team, size);
        assert_eq!(
            uses.iter().sum::<u64>(),
            league as u64,
            "rank 0 of each team counted once"
        );
        assert_eq!(words, token_words(size), "rank 0 released every team's id");
    }
    let space = RayonSpace::default();
    let tokens = space.unique_token_with_size(size)?;
    let policy = TeamPolicy::new(space, league, TeamSize::Auto);
    let team = policy.team_size();
    let (slots, uses) = (
        View::<u64, 2>::new("ids", [league, team])?,
        View::<u64, 1>::new("uses", [size])?,
    );
    parallel_for(
        "team ids",
        (policy, (slots.team_slots(), uses.atomic())),
        team_token_slots::with::<RayonSpace>(&tokens),
    )?;
    one_id_per_team(&slots.to_vec()?, team, size);
    assert_eq!(uses.to_vec()?.iter().sum::<u64>(), league as u64);
    Ok(())
}
