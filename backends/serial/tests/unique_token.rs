//! Unique tokens of the serial space: ids in range, never shared while live, released by guards.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    Error, ExecutionSpace, RangePolicy, Sum, UniqueToken, UniqueTokenSpace, parallel_for, parallel_reduce,
};
use hoplite_serial::Serial;

#[test]
fn all_ids_of_a_sized_token_are_distinct_and_in_range() {
    let token = Serial::default()
        .unique_token_with_size(8)
        .expect("size 8 is valid");
    assert_eq!(token.size(), 8);
    let mut ids: Vec<usize> = (0..8).map(|_| token.try_acquire().expect("a free id")).collect();
    assert_eq!(token.live(), 8);
    assert_eq!(token.try_acquire(), None, "all 8 ids are live");
    // A clone shares the pool: it has nothing free either.
    let clone = token.clone();
    assert_eq!(clone.try_acquire(), None);
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..8).collect::<Vec<_>>());

    // Release one id: exactly that one comes back, then the pool is full again.
    let freed = ids.remove(3);
    token.release(freed);
    assert_eq!(token.live(), 7);
    assert_eq!(clone.try_acquire(), Some(freed));
    assert_eq!(token.try_acquire(), None);
    ids.push(freed);

    for id in ids {
        token.release(id);
    }
    assert_eq!(token.live(), 0);
    // `acquire` does not block when an id is free.
    let id = token.acquire();
    assert!(id < 8);
    token.release(id);
}

#[test]
fn sizes_above_one_word_work() {
    let token = Serial::new()
        .unique_token_with_size(130)
        .expect("size 130 is valid");
    let ids: Vec<usize> = (0..130)
        .map(|_| token.try_acquire().expect("a free id"))
        .collect();
    assert!(ids.iter().all(|&id| id < 130));
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 130);
    assert_eq!(token.try_acquire(), None);
    token.release(129);
    token.release(64);
    let mut again = [
        token.try_acquire().expect("one free"),
        token.try_acquire().expect("two free"),
    ];
    again.sort_unstable();
    assert_eq!(again, [64, 129]);
}

#[test]
fn guards_release_on_drop() {
    let token = Serial::default()
        .unique_token_with_size(2)
        .expect("size 2 is valid");
    {
        let a = token.guard();
        let b = token.guard();
        assert_ne!(*a, *b);
        assert!(a.id() < 2 && b.id() < 2);
        assert_eq!(token.live(), 2);
        assert_eq!(token.try_acquire(), None);
        drop(a);
        assert_eq!(token.live(), 1);
        let c = token.guard();
        assert_ne!(*c, *b);
        assert_eq!(token.live(), 2);
    }
    assert_eq!(token.live(), 0);
}

#[test]
fn default_token_size_is_the_concurrency() {
    let space = Serial::default();
    let token = space.unique_token();
    assert_eq!(space.concurrency(), 1);
    assert_eq!(token.size(), space.concurrency());
    let g = token.guard();
    assert_eq!(*g, 0);
    assert_eq!(token.try_acquire(), None);
    drop(g);
    assert_eq!(token.try_acquire(), Some(0));
    token.release(0);
    // Tokens of different instances are independent pools.
    let other = Serial::new().unique_token();
    let held = token.guard();
    assert_eq!(other.try_acquire(), Some(0));
    other.release(0);
    drop(held);
}

#[test]
fn global_token_works() {
    let global = Serial::global_unique_token();
    assert!(global.size() >= 1);
    let id = {
        let g = global.guard();
        assert!(*g < global.size());
        *g
    };
    assert!(id < global.size());
    // The global token is one pool: a second handle sees the same ids.
    let again = Serial::global_unique_token();
    assert_eq!(again.size(), global.size());
    let held: Vec<usize> = (0..global.size())
        .map(|_| global.try_acquire().expect("free"))
        .collect();
    assert_eq!(again.try_acquire(), None);
    for id in held {
        again.release(id);
    }
    assert_eq!(global.live(), 0);
}

#[test]
fn size_zero_is_an_error() {
    let err = Serial::default().unique_token_with_size(0).expect_err("size 0");
    assert!(
        matches!(
            err,
            Error::InvalidTokenSize {
                requested: 0,
                space: "Serial",
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("size 0") && msg.contains("Serial") && msg.contains("at least one id"),
        "{msg}"
    );
}

#[test]
fn release_of_an_id_not_held_panics() {
    let token = Serial::default().unique_token_with_size(4).expect("size 4");
    let not_held = std::panic::catch_unwind(|| token.release(2));
    assert!(not_held.is_err());
    let out_of_range = std::panic::catch_unwind(|| token.release(4));
    assert!(out_of_range.is_err());
    assert_eq!(token.live(), 0);
}

#[test]
fn tokens_inside_kernels() {
    let space = Serial::default();
    let token = space.unique_token();
    let per_id: Vec<AtomicUsize> = (0..token.size()).map(|_| AtomicUsize::new(0)).collect();
    parallel_for("token-for", RangePolicy::new(space.clone(), 0..100), |i| {
        let g = token.guard();
        per_id[*g].fetch_add(*i, Ordering::Relaxed);
    })
    .expect("token-for launches");
    assert_eq!(
        per_id.iter().map(|c| c.load(Ordering::Relaxed)).sum::<usize>(),
        4950
    );
    assert_eq!(token.live(), 0);

    // A larger token used from a reduction: ids stay in range, and no two live ids are equal
    // even when an iteration holds two at once.
    let sized = space.unique_token_with_size(4).expect("size 4");
    let pairs = Mutex::new(Vec::new());
    let bad = parallel_reduce(
        "token-reduce",
        RangePolicy::new(space, 0..50),
        |_, acc: &mut usize| {
            let a = sized.guard();
            let b = sized.guard();
            pairs.lock().expect("not poisoned").push((*a, *b));
            *acc += usize::from(*a == *b || *a >= 4 || *b >= 4);
        },
        Sum::new(),
    )
    .expect("token-reduce launches");
    assert_eq!(bad, 0);
    assert_eq!(pairs.into_inner().expect("not poisoned").len(), 50);
    assert_eq!(sized.live(), 0);
}
