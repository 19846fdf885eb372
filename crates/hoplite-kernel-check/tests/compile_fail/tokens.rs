use hoplite::prelude::*;
use hoplite::kernel;
use hoplite::BoundAtomic;

// An id that is never given back: the host pool would lose it for good.
#[kernel]
fn leaks(i: Idx<'_>, h: BoundAtomic<'_, u64, 1>, tokens: &impl UniqueToken) {
    let id = tokens.acquire();
    h.fetch_add(id, *i as u64);
}

// An id used without a `let`: nothing could release it.
#[kernel]
fn inline_acquire(i: Idx<'_>, h: BoundAtomic<'_, u64, 1>, tokens: &impl UniqueToken) {
    h.fetch_add(tokens.acquire(), *i as u64);
}

// Releasing a number that did not come from `acquire`: a device thread could clear another
// thread's id.
#[kernel]
fn releases_a_number(i: Idx<'_>, h: BoundAtomic<'_, u64, 1>, tokens: &impl UniqueToken) {
    let id = tokens.acquire();
    h.fetch_add(id, 1);
    tokens.release(id);
    tokens.release(*i % tokens.size());
}

// One id for a whole team is a team collective: not inside a nested loop's closure, whose
// indices the team's threads split.
#[kernel]
fn team_ids(m: &impl TeamMember, h: BoundAtomic<'_, u64, 1>, tokens: &impl UniqueToken) {
    TeamThreadRange::new(m, 4).parallel_for(|j| {
        let id = tokens.team_guard(m);
        h.fetch_add(*id, *j as u64);
    });
}

fn main() {}
