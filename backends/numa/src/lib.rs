//! # hoplite-numa
//!
//! The NUMA backend of hoplite, on hwloc (through `hwlocality`): one thread pool per NUMA node
//! with its workers bound to that node's cores, and host memory bound to nodes.
//!
//! * [`NumaTopology`]: the machine's nodes, discovered by hwloc, or synthetic
//!   (`NumaTopology::synthetic("pack:2 numa:2 core:4 pu:2")`, or the environment variable
//!   [`TOPOLOGY_ENV`] for any program).
//! * [`NumaSpace`]: the execution space. [`NumaSpace::new`] spans every node: a launch's
//!   static split gives each node one contiguous part of the range, divided among its workers.
//!   [`NumaSpace::node`] is one node's pool. Every pattern of the rayon backend runs on it
//!   (range, MDRange, teams with scratch, reductions — deterministic too —, scans, unique
//!   tokens): each instance is a rayon-backend instance whose workers bind themselves to
//!   their node when they start.
//! * [`NumaMemory`]: the memory space: host memory placed by first touch, bound to one node,
//!   or interleaved ([`Placement`]); [`memory_binding`] reports what hwloc says the pages got.
//! * Dynamic selection: node pools are resources of `hoplite-select` as they are (its
//!   `SpaceBackend`), and [`NodeTasks`] — a node's pool with a task group that can be waited
//!   for — has its own backend, [`NumaBackend`], one resource per node by default.
//! * The implicit DAG runtime: `hoplite_dag::device::HostDevice::new("node 0",
//!   vec![space.node(0)?])` is a device whose streams run on node 0's pool.
//!
//! ```
//! use hoplite_core::{LayoutRight, RangePolicy, Sum, View, parallel_for, parallel_reduce};
//! use hoplite_numa::{NumaMemory, NumaSpace, NumaTopology};
//!
//! // Two nodes of two cores, as if on a bigger machine (unbound here).
//! let space = NumaSpace::with_topology(&NumaTopology::synthetic("numa:2 core:2 pu:1")?, 0)?;
//! let n = 100_000;
//! let x = space.first_touch_view("x", n, 1.0f64)?;
//! let y: View<f64, 1, LayoutRight, NumaMemory> = View::new_in(space.memory_interleaved(), "y", [n])?;
//! parallel_for("triad", (RangePolicy::new(space.clone(), 0..n), (y.write(), x.read())),
//!     |(i, (y, x))| y.set(i, 2.0 * x.get(i)))?;
//! let on_node_1 = space.node(1)?;
//! let sum = parallel_reduce("sum", (RangePolicy::new(on_node_1, 0..n), y.read()),
//!     |(i, y), acc| *acc += y.get(i), Sum::<f64>::new())?;
//! assert_eq!(sum, 2.0 * n as f64);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Binding, and where it is impossible
//!
//! Each worker binds itself to its node's cpuset (hwloc `bind_cpu`, `THREAD`) as it starts;
//! [`NumaSpace::thread_binding`] reports the outcome. The launching thread is the caller's
//! own (rank 0, which does its share of every launch) and keeps the caller's binding. On a
//! synthetic topology nothing can be bound: the pools run unbound and say so once on standard
//! error; memory placements fall back to first touch, say so once, and are counted by
//! [`NumaMemory::binding_failures`]. A launch never fails because of placement.
//!
//! # System library
//!
//! The crate links the system's hwloc (`libhwloc-dev` 2.9 on Debian, and `libudev-dev`);
//! `cargo xtask test` installs both. A program built with it needs `libhwloc15` at run time
//! (the dynamic loader refuses to start it otherwise); a machine hwloc cannot read gives
//! [`NumaError::TopologyUnavailable`].

mod dispatch;
mod error;
mod memory;
mod select;
mod space;
mod topology;

pub use error::NumaError;
pub use memory::{AreaBinding, AreaPolicy, NumaMemory, Placement, memory_binding};
pub use select::{NodeTasks, NumaBackend};
pub use space::{NumaSpace, ThreadBinding};
pub use topology::{NodeInfo, NumaTopology, TOPOLOGY_ENV, TopologySource};

/// The space's name, as [`ExecutionSpace::name`](hoplite_core::ExecutionSpace::name) returns it.
pub(crate) const NAME: &str = "Numa";
/// The memory space's name.
pub(crate) const MEMORY_NAME: &str = "NumaMemory";
