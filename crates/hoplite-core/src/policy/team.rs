//! [`TeamPolicy`]: a league of teams, with team sizes, vector lengths and scratch requests.

use super::{ExecutionPolicy, Schedule, check_chunk};
use crate::error::{Error, Result};
use crate::index::IndexBounds;
use crate::space::ExecutionSpace;

/// The team size of a [`TeamPolicy`]: a number, or the backend's choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TeamSize {
    /// The backend picks (Kokkos `AUTO`): the space's recommended size for the policy's
    /// scratch ([`ExecutionSpace::recommended_team_size`]), which host spaces make their
    /// maximum and a GPU a size that keeps its multiprocessors full. The policy's
    /// [`team_size`](TeamPolicy::team_size) reports it, and launches run teams of that size.
    #[default]
    Auto,
    /// Exactly this many threads per team.
    Fixed(usize),
}

impl From<usize> for TeamSize {
    fn from(n: usize) -> Self {
        TeamSize::Fixed(n)
    }
}

/// The vector length of a [`TeamPolicy`]: chosen by the backend (Kokkos `AUTO`) or fixed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum VectorLength {
    /// The backend picks: the space's maximum vector length (1 on the host backends, whose
    /// vector lanes run in the thread's own loop).
    #[default]
    Auto,
    /// Exactly this many lanes (a power of two, at most the space's maximum).
    Fixed(usize),
}

impl From<usize> for VectorLength {
    fn from(n: usize) -> Self {
        VectorLength::Fixed(n)
    }
}

/// Scratch bytes per team (Kokkos `PerTeam`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PerTeam(pub usize);

/// Scratch bytes per thread of a team (Kokkos `PerThread`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PerThread(pub usize);

/// Number of scratch levels (0: small and fast, 1: large).
pub const SCRATCH_LEVELS: usize = 2;

/// A league of teams (Kokkos `TeamPolicy`). Kernels receive a
/// [`TeamMember`](crate::TeamMember) of the space.
///
/// ```
/// use hoplite_core::{PerTeam, PerThread, TeamPolicy, TeamSize};
/// use hoplite_serial::Serial;
/// let p = TeamPolicy::new(Serial::default(), 64, TeamSize::Auto)
///     .with_scratch_size(0, PerTeam(1024), PerThread(64));
/// assert_eq!(p.team_size(), 1); // Serial teams have one thread
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TeamPolicy<S: ExecutionSpace> {
    space: S,
    league_size: usize,
    team_size: TeamSize,
    vector_length: VectorLength,
    scratch: [(PerTeam, PerThread); SCRATCH_LEVELS],
    bad_scratch_level: Option<usize>,
    chunk: Option<usize>,
    schedule: Schedule,
    occupancy: Option<u8>,
}

impl<S: ExecutionSpace> TeamPolicy<S> {
    /// `league_size` teams of `team_size` threads on `space` (a number, or
    /// [`TeamSize::Auto`] for the backend's choice).
    ///
    /// ```
    /// use hoplite_core::{parallel_for, Sum, TeamMember, TeamPolicy, TeamSize, TeamThreadRange, View};
    /// use hoplite_serial::Serial;
    /// let sums: View<u64, 1> = View::new("sums", [4])?;
    /// // One team per row of a 4 x 8 matrix of ones; each team sums its row.
    /// let policy = TeamPolicy::new(Serial::default(), 4, TeamSize::Auto);
    /// parallel_for("rows", (policy, (sums.write(),)), |(team, (sums,))| {
    ///     let row = TeamThreadRange::new(team, 8).parallel_reduce(|_, acc: &mut u64| *acc += 1, Sum::new());
    ///     if let Some(i) = team.league_token().single() {
    ///         sums.set(i, row);
    ///     }
    /// })?;
    /// assert_eq!(sums.to_vec()?, [8; 4]);
    /// # Ok::<(), hoplite_core::Error>(())
    /// ```
    pub fn new(space: S, league_size: usize, team_size: impl Into<TeamSize>) -> Self {
        TeamPolicy {
            space,
            league_size,
            team_size: team_size.into(),
            vector_length: VectorLength::Fixed(1),
            scratch: Default::default(),
            bad_scratch_level: None,
            chunk: None,
            schedule: Schedule::Static,
            occupancy: None,
        }
    }

    /// Sets the vector length: a power of two, at most the space's maximum, or
    /// [`VectorLength::Auto`] for the space's choice.
    ///
    /// ```
    /// use hoplite_core::{TeamPolicy, VectorLength};
    /// use hoplite_serial::Serial;
    /// let p = TeamPolicy::new(Serial::default(), 4, 1).with_vector_length(VectorLength::Auto);
    /// assert_eq!(p.vector_length(), 1); // the host runs vector lanes in the thread's loop
    /// ```
    pub fn with_vector_length(mut self, vector_length: impl Into<VectorLength>) -> Self {
        self.vector_length = vector_length.into();
        self
    }

    /// Requests scratch memory at `level` (0 or 1): `per_team` bytes shared by the team and
    /// `per_thread` bytes private to each thread.
    pub fn with_scratch_size(mut self, level: usize, per_team: PerTeam, per_thread: PerThread) -> Self {
        match self.scratch.get_mut(level) {
            Some(slot) => *slot = (per_team, per_thread),
            None => self.bad_scratch_level = Some(level),
        }
        self
    }

    /// Sets how many teams a thread takes at a time.
    pub fn with_chunk_size(mut self, chunk: usize) -> Self {
        self.chunk = Some(chunk);
        self
    }

    /// Sets the schedule.
    pub fn with_schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// Asks a device backend to launch at most `percent` (1 to 100) of the teams the device
    /// keeps resident for this kernel (the launched teams walk the rest of the league), as
    /// [`RangePolicy::with_desired_occupancy`](crate::RangePolicy::with_desired_occupancy)
    /// does; host backends ignore it.
    ///
    /// ```
    /// use hoplite_core::TeamPolicy;
    /// use hoplite_serial::Serial;
    /// let p = TeamPolicy::new(Serial::default(), 1000, 1).with_desired_occupancy(30);
    /// assert_eq!(p.desired_occupancy(), Some(30));
    /// ```
    pub fn with_desired_occupancy(mut self, percent: u8) -> Self {
        self.occupancy = Some(percent);
        self
    }

    /// The desired occupancy asked for, in percent, if any.
    pub fn desired_occupancy(&self) -> Option<u8> {
        self.occupancy
    }

    /// The same league, team size (as asked for: `Auto` is resolved by the new space), vector
    /// length, scratch, chunk size, schedule and desired occupancy on an instance of another
    /// space.
    ///
    /// ```
    /// use hoplite_core::{PerTeam, PerThread, TeamPolicy};
    /// use hoplite_serial::Serial;
    /// let p = TeamPolicy::new(Serial::default(), 8, 1).with_scratch_size(1, PerTeam(64), PerThread(8));
    /// let q: TeamPolicy<Serial> = p.clone().on_space(Serial::default());
    /// assert_eq!(q, p);
    /// ```
    pub fn on_space<S2: ExecutionSpace>(self, space: S2) -> TeamPolicy<S2> {
        TeamPolicy {
            space,
            league_size: self.league_size,
            team_size: self.team_size,
            vector_length: self.vector_length,
            scratch: self.scratch,
            bad_scratch_level: self.bad_scratch_level,
            chunk: self.chunk,
            schedule: self.schedule,
            occupancy: self.occupancy,
        }
    }

    /// Number of teams.
    pub fn league_size(&self) -> usize {
        self.league_size
    }

    /// The team size as asked for.
    pub fn requested_team_size(&self) -> TeamSize {
        self.team_size
    }

    /// The team size a launch uses: the fixed size, or for `Auto`
    /// [`team_size_recommended`](Self::team_size_recommended). Every member of a launch of
    /// this policy reports it as its `team_size()`.
    pub fn team_size(&self) -> usize {
        match self.team_size {
            TeamSize::Fixed(n) => n,
            TeamSize::Auto => self.team_size_recommended(),
        }
    }

    /// The largest team size this policy's space accepts (Kokkos `team_size_max`).
    pub fn team_size_max(&self) -> usize {
        self.space.max_team_size()
    }

    /// The team size the space recommends for this policy's scratch (Kokkos
    /// `team_size_recommended`): what `TeamSize::Auto` launches with, at most
    /// [`team_size_max`](Self::team_size_max).
    ///
    /// ```
    /// use hoplite_core::{PerTeam, PerThread, TeamPolicy, TeamSize};
    /// use hoplite_serial::Serial;
    /// let p = TeamPolicy::new(Serial::default(), 8, TeamSize::Auto).with_scratch_size(0, PerTeam(256), PerThread(8));
    /// assert_eq!(p.team_size(), p.team_size_recommended());
    /// assert!(p.team_size_recommended() <= p.team_size_max());
    /// ```
    pub fn team_size_recommended(&self) -> usize {
        let scratch = self.scratch.map(|(team, thread)| (team.0, thread.0));
        self.space.recommended_team_size(&scratch)
    }

    /// The vector length a launch uses: the fixed length, or for `Auto` the space's maximum.
    pub fn vector_length(&self) -> usize {
        match self.vector_length {
            VectorLength::Fixed(n) => n,
            VectorLength::Auto => self.space.max_vector_length(),
        }
    }

    /// Scratch bytes requested at `level`: `(per team, per thread)`; zero for unknown levels.
    pub fn scratch_size(&self, level: usize) -> (usize, usize) {
        self.scratch
            .get(level)
            .map_or((0, 0), |(team, thread)| (team.0, thread.0))
    }

    /// A scratch level above 1 that [`with_scratch_size`](Self::with_scratch_size) was asked
    /// for (the launch reports it as `Error::InvalidScratchLevel`), if any.
    ///
    /// ```
    /// use hoplite_core::{PerTeam, PerThread, TeamPolicy};
    /// use hoplite_serial::Serial;
    /// let p = TeamPolicy::new(Serial::default(), 8, 1).with_scratch_size(2, PerTeam(64), PerThread(0));
    /// assert_eq!(p.invalid_scratch_level(), Some(2));
    /// ```
    pub fn invalid_scratch_level(&self) -> Option<usize> {
        self.bad_scratch_level
    }

    /// The chunk size asked for, if any.
    pub fn chunk_size(&self) -> Option<usize> {
        self.chunk
    }

    /// The schedule.
    pub fn schedule(&self) -> Schedule {
        self.schedule
    }
}

// SAFETY: league ranks `0..league_size` are the index space and the bounds; team tokens are
// checked per store against the view, since no launch-wide range covers them.
unsafe impl<S: ExecutionSpace> ExecutionPolicy for TeamPolicy<S> {
    type Space = S;
    type Item<'it> = &'it S::TeamMember<'it>;
    const KIND: &'static str = "TeamPolicy";

    fn space(&self) -> &S {
        &self.space
    }
    fn with_space(mut self, space: S) -> Self {
        self.space = space;
        self
    }

    fn index_bounds(&self) -> IndexBounds {
        IndexBounds::League {
            size: self.league_size,
        }
    }

    fn validate(&self, label: &str) -> Result<()> {
        let space = &self.space;
        let team_size = self.team_size();
        if team_size == 0 {
            return Err(Error::ZeroTeamSize {
                label: label.to_owned(),
            });
        }
        if team_size > space.max_team_size() {
            return Err(Error::TeamSizeTooLarge {
                label: label.to_owned(),
                requested: team_size,
                max: space.max_team_size(),
                space: space.name(),
            });
        }
        let max_vector = space.max_vector_length();
        let vector_length = self.vector_length();
        if vector_length == 0 || !vector_length.is_power_of_two() || vector_length > max_vector {
            return Err(Error::InvalidVectorLength {
                label: label.to_owned(),
                requested: vector_length,
                max: max_vector,
                space: space.name(),
            });
        }
        if let Some(level) = self.bad_scratch_level {
            return Err(Error::InvalidScratchLevel {
                label: label.to_owned(),
                level,
            });
        }
        for level in 0..SCRATCH_LEVELS {
            let (team, thread) = self.scratch_size(level);
            let requested = thread.saturating_mul(team_size).saturating_add(team);
            let max = space.max_scratch_size(level);
            if requested > max {
                return Err(Error::ScratchTooLarge {
                    label: label.to_owned(),
                    level,
                    requested,
                    max,
                });
            }
        }
        check_chunk(label, self.chunk)?;
        super::check_occupancy(label, self.occupancy)
    }
}
