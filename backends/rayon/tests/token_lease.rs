//! The per-share lease of unique-token ids: a thread running its share of a launch keeps the
//! id of its rank parked between its guards, and gives it back whenever another thread could
//! be waiting for it.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use hoplite_core::{RangePolicy, TeamMember, TeamPolicy, UniqueToken, UniqueTokenSpace, parallel_for};
use hoplite_rayon::RayonSpace;

/// Takes a guard, checks nobody else holds its id, and returns the id.
fn use_once<T: UniqueToken>(tokens: &T, held: &[AtomicU32]) -> usize {
    let id = tokens.guard();
    assert_eq!(held[*id].fetch_add(1, Ordering::SeqCst), 0, "id {} shared", *id);
    held[*id].fetch_sub(1, Ordering::SeqCst);
    *id
}

#[test]
fn per_element_guards_keep_each_thread_on_one_id_and_free_them_at_the_end() {
    let space = RayonSpace::with_threads(3).expect("a pool");
    let tokens = space.unique_token();
    assert_eq!(tokens.size(), 3);
    let held: Vec<AtomicU32> = (0..3).map(|_| AtomicU32::new(0)).collect();
    let seen: Mutex<HashMap<std::thread::ThreadId, HashSet<usize>>> = Mutex::new(HashMap::new());
    for _ in 0..20 {
        parallel_for("guards", RangePolicy::new(space.clone(), 0..30_000), |i| {
            let id = use_once(&tokens, &held);
            if *i % 1000 == 0 {
                let mut seen = seen.lock().expect("seen");
                seen.entry(std::thread::current().id()).or_default().insert(id);
            }
        })
        .expect("launch");
        assert_eq!(
            tokens.live(),
            0,
            "every parked id went back when the shares ended"
        );
    }
    for (thread, ids) in seen.into_inner().expect("seen") {
        assert_eq!(
            ids.len(),
            1,
            "thread {thread:?} took ids {ids:?}: one of its own expected"
        );
    }
}

#[test]
fn a_pool_smaller_than_the_launch_is_shared_per_guard() {
    let space = RayonSpace::with_threads(3).expect("a pool");
    let tokens = space.unique_token_with_size(1).expect("one id");
    let held = [AtomicU32::new(0)];
    parallel_for("one id", RangePolicy::new(space.clone(), 0..20_000), |_| {
        assert_eq!(use_once(&tokens, &held), 0);
    })
    .expect("launch");
    assert_eq!(tokens.live(), 0);
}

#[test]
fn nested_guards_and_a_second_pool_keep_ids_unique() {
    let space = RayonSpace::with_threads(2).expect("a pool");
    let a = space.unique_token_with_size(4).expect("pool a");
    let b = space.unique_token_with_size(2).expect("pool b");
    let held_a: Vec<AtomicU32> = (0..4).map(|_| AtomicU32::new(0)).collect();
    let held_b: Vec<AtomicU32> = (0..2).map(|_| AtomicU32::new(0)).collect();
    parallel_for("nested", RangePolicy::new(space.clone(), 0..20_000), |i| {
        let outer = a.guard();
        assert_eq!(held_a[*outer].fetch_add(1, Ordering::SeqCst), 0);
        // A second id of the same pool while the first is held, then the other pool.
        use_once(&a, &held_a);
        if *i % 3 == 0 {
            use_once(&b, &held_b);
        }
        held_a[*outer].fetch_sub(1, Ordering::SeqCst);
    })
    .expect("launch");
    assert_eq!((a.live(), b.live()), (0, 0));
    // A release of an id the thread took back from its lease, twice, is caught.
    let twice = parallel_for("twice", RangePolicy::new(space.clone(), 0..1), |_| {
        let id = a.acquire();
        a.release(id);
        a.release(id);
    });
    assert!(twice.is_err(), "a double release through the lease must panic");
    assert_eq!(a.live(), 0, "the pool is whole after the failed launch");
}

#[test]
fn a_team_barrier_gives_back_the_id_a_teammate_waits_for() {
    // Rank 0 parks id 0 and waits at the barrier for rank 1, which needs an id while id 1 is
    // held outside the launch: only id 0 can serve it, so the barrier must give it back.
    let space = RayonSpace::with_threads(2).expect("a pool");
    let tokens = space.unique_token();
    assert_eq!(tokens.size(), 2);
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        assert!(tokens.try_claim(1), "id 1 is free before the launch");
        let result = parallel_for("barrier", TeamPolicy::new(space.clone(), 4, 2), |m| {
            if m.team_rank() == 0 {
                drop(tokens.guard());
            } else {
                assert_eq!(*tokens.guard(), 0, "id 1 is held outside");
            }
            m.team_barrier();
        });
        tokens.release(1);
        let live = tokens.live();
        let _ = done.send((result.is_ok(), live));
    });
    let outcome = finished.recv_timeout(Duration::from_secs(60));
    assert_eq!(outcome, Ok((true, 0)), "the launch finished and freed every id");
    worker.join().expect("the launching thread");
}
