//! The conversions the seed asks for: a range is an MDRange of rank 1, and an MDRange of rank 1
//! starting at 0 is a league of one-thread teams (`RangePolicy -> MDRangePolicy<_, 1> -> TeamPolicy`).

use super::{MDRangePolicy, RangePolicy, TeamPolicy, TeamSize};
use crate::error::{Error, Result};
use crate::space::ExecutionSpace;

impl<S: ExecutionSpace> From<RangePolicy<S>> for MDRangePolicy<S, 1> {
    /// The same points as a rank-1 box; the chunk size becomes the tile, the schedule, the
    /// reduction mode and the desired occupancy carry over.
    fn from(p: RangePolicy<S>) -> Self {
        let chunk = p.chunk_size();
        let mut md = MDRangePolicy::new(p.space, [p.begin], [p.end])
            .with_deterministic_reduction(p.deterministic)
            .with_schedule(p.schedule);
        if let Some(percent) = p.occupancy {
            md = md.with_desired_occupancy(percent);
        }
        match chunk {
            Some(c) => md.with_tiles([c]),
            None => md,
        }
    }
}

impl<S: ExecutionSpace> TryFrom<MDRangePolicy<S, 1>> for TeamPolicy<S> {
    type Error = Error;
    /// `end` one-thread teams; league rank `r` is index `r`. The box must start at 0 because
    /// league ranks do; the tile becomes the chunk size, and the schedule and the desired
    /// occupancy carry over.
    fn try_from(p: MDRangePolicy<S, 1>) -> Result<Self> {
        if p.begin[0] != 0 {
            return Err(Error::PolicyConversion {
                from: "MDRangePolicy<1>",
                to: "TeamPolicy",
                reason: format!(
                    "the range starts at {} but league ranks start at 0; shift the index in the kernel instead",
                    p.begin[0]
                ),
            });
        }
        let occupancy = p.desired_occupancy();
        let mut team = TeamPolicy::new(p.space, p.end[0], TeamSize::Fixed(1)).with_schedule(p.schedule);
        if let Some(percent) = occupancy {
            team = team.with_desired_occupancy(percent);
        }
        Ok(match p.tiles {
            Some([t]) => team.with_chunk_size(t),
            None => team,
        })
    }
}

impl<S: ExecutionSpace> TryFrom<RangePolicy<S>> for TeamPolicy<S> {
    type Error = Error;
    /// Through [`MDRangePolicy<S, 1>`]: `end` one-thread teams, for ranges starting at 0.
    fn try_from(p: RangePolicy<S>) -> Result<Self> {
        TeamPolicy::try_from(MDRangePolicy::from(p))
    }
}
