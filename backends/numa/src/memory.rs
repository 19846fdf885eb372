//! `NumaMemory`: host memory placed on NUMA nodes.
//!
//! Every allocation is ordinary host memory from the global allocator, page-aligned when it
//! spans at least a page, and then (for [`Placement::Node`] and [`Placement::Interleave`])
//! bound with hwloc's `bind_memory_area`. The steps, in order:
//!
//! 1. allocate without clearing (a first-touch allocation of a page or more that must read
//!    as zeros comes from the operating system as untouched zero pages instead);
//! 2. bind the pages of the area to the node set with the placement's policy, before
//!    anything writes them;
//! 3. clear the memory if asked to: this first touch places every page on the bound nodes.
//!    (Pages the allocator recycles from earlier use of the heap were placed already and
//!    stay where they are; large allocations are fresh pages.)
//! 4. if binding is impossible (a synthetic topology, a system without `mbind`), keep the
//!    memory unbound, count the failure ([`NumaMemory::binding_failures`]) and say so once on
//!    standard error: the data path never fails because of placement, and never hides it.
//!
//! Allocations smaller than a page share their pages with other objects and are not bound.
//! [`memory_binding`] reports what hwloc says an allocation's pages are bound to.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

use hoplite_core::AllocationRecords;
use hoplite_core::{
    ArrayLayout, Error, HostAccessibleSpace, HostSpace, MemorySpace, MemorySpaceAccess, Result, View,
    ViewValue,
};
use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::memory::nodeset::NodeSet;
use parking_lot::Mutex;

use crate::error::NumaError;
use crate::topology::NumaTopology;

/// Allocations of at least this many bytes are page-aligned, so binding them moves no
/// neighbour's memory.
const PAGE: usize = 4096;

/// Where the pages of a [`NumaMemory`] allocation go.
///
/// ```
/// use hoplite_numa::{NumaMemory, NumaTopology, Placement};
/// let topo = NumaTopology::synthetic("numa:2 core:1 pu:1")?;
/// assert_eq!(NumaMemory::bound_to(&topo, 1)?.placement(), Placement::Node(1));
/// assert_eq!(NumaMemory::default().placement(), Placement::FirstTouch);
/// # Ok::<(), hoplite_numa::NumaError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    /// Each page goes to the node of the thread that first writes it: initialise with a launch
    /// on the pools that will use the data (see
    /// [`NumaSpace::first_touch_view`](crate::NumaSpace::first_touch_view)).
    #[default]
    FirstTouch,
    /// Every page on this node (logical index).
    Node(usize),
    /// Pages round robin over all nodes.
    Interleave,
}

/// The memory space of [`NumaSpace`](crate::NumaSpace): host memory with a [`Placement`].
/// The host and every host backend read and write it directly; `deep_copy` to and from
/// `HostSpace` views is a plain copy.
///
/// ```
/// use hoplite_core::{LayoutRight, View};
/// use hoplite_numa::{NumaMemory, NumaTopology};
/// let topo = NumaTopology::discover()?;
/// let v: View<f64, 1, LayoutRight, NumaMemory> = View::new_in(NumaMemory::bound_to(&topo, 0)?, "on node 0", [1 << 16])?;
/// assert_eq!(v.to_vec()?.len(), 1 << 16);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct NumaMemory {
    placement: Placement,
    /// The topology to bind with; `None` for first touch (nothing to bind).
    topology: Option<NumaTopology>,
}

impl NumaMemory {
    /// Memory placed where it is first touched (the operating system's default).
    pub fn first_touch() -> Self {
        NumaMemory::default()
    }

    /// Memory bound to `node` of `topology` (hwloc's `Bind` policy).
    ///
    /// ```
    /// use hoplite_numa::{NumaError, NumaMemory, NumaTopology};
    /// let topo = NumaTopology::synthetic("numa:2 pu:1")?;
    /// let err = NumaMemory::bound_to(&topo, 2).expect_err("two nodes");
    /// assert_eq!(err, NumaError::NodeOutOfRange { node: 2, nodes: 2 });
    /// # Ok::<(), NumaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NumaError::NodeOutOfRange`] when `node` is not a node of `topology`.
    pub fn bound_to(topology: &NumaTopology, node: usize) -> std::result::Result<Self, NumaError> {
        topology.node(node)?;
        Ok(NumaMemory {
            placement: Placement::Node(node),
            topology: Some(topology.clone()),
        })
    }

    /// Memory interleaved page by page over every node of `topology`.
    pub fn interleaved(topology: &NumaTopology) -> Self {
        NumaMemory {
            placement: Placement::Interleave,
            topology: Some(topology.clone()),
        }
    }

    /// The placement of this space's allocations.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Live bytes of tracked and untracked allocations per placement, for the placements that
    /// have any (the per-node allocation records).
    ///
    /// ```
    /// use hoplite_core::{LayoutRight, View};
    /// use hoplite_numa::{NumaMemory, NumaTopology, Placement};
    /// let topo = NumaTopology::synthetic("numa:2 pu:1")?;
    /// let v: View<u8, 1, LayoutRight, NumaMemory> = View::new_in(NumaMemory::bound_to(&topo, 1)?, "n1", [10_000])?;
    /// let on_1 = NumaMemory::live_bytes().into_iter().find(|(p, _)| *p == Placement::Node(1));
    /// assert!(on_1.is_some_and(|(_, bytes)| bytes >= 10_000));
    /// drop(v);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn live_bytes() -> Vec<(Placement, usize)> {
        live().lock().iter().map(|(p, b)| (*p, *b)).collect()
    }

    /// How many allocations could not be bound as asked (they were kept, unbound).
    pub fn binding_failures() -> usize {
        BINDING_FAILURES.load(Ordering::Relaxed)
    }

    fn alloc(&self, label: &str, bytes: usize, zeroed: bool) -> Result<NonNull<u8>> {
        let fail = |reason: String| Error::AllocationFailed {
            label: label.to_owned(),
            bytes,
            space: crate::MEMORY_NAME,
            reason,
        };
        if bytes == 0 {
            // A dangling pointer aligned to the space's alignment: nothing is allocated.
            return NonNull::new(Self::ALIGNMENT as *mut u8)
                .ok_or_else(|| fail("alignment is zero".to_owned()));
        }
        let layout = layout_for(bytes).map_err(|e| fail(format!("invalid size: {e}")))?;
        // Placed memory is bound before anything writes it, and cleared after: clearing is the
        // first touch, which then lands on the bound nodes.
        let bind_first = self.placement != Placement::FirstTouch && bytes >= PAGE;
        // SAFETY: `layout` has a non-zero size (checked above).
        let raw = unsafe {
            if zeroed && !bind_first {
                std::alloc::alloc_zeroed(layout)
            } else {
                std::alloc::alloc(layout)
            }
        };
        let ptr = NonNull::new(raw).ok_or_else(|| fail("out of memory".to_owned()))?;
        if bind_first {
            self.bind(ptr, bytes);
            if zeroed {
                // SAFETY: `ptr` is valid for `bytes` bytes of writes (just allocated, unshared).
                unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
            }
        }
        *live().lock().entry(self.placement).or_default() += bytes;
        Ok(ptr)
    }

    /// Binds the pages of a fresh allocation; on failure counts it and says so once.
    fn bind(&self, ptr: NonNull<u8>, bytes: usize) {
        let (Some(topology), policy) = (&self.topology, self.placement) else {
            return;
        };
        let (nodeset, policy) = match policy {
            Placement::FirstTouch => return,
            Placement::Node(node) => match topology.node(node) {
                Ok(n) => (n.nodeset.clone(), MemoryBindingPolicy::Bind),
                Err(_) => return,
            },
            Placement::Interleave => (
                NodeSet::clone(&topology.hwloc().nodeset()),
                MemoryBindingPolicy::Interleave,
            ),
        };
        let outcome = if topology.can_bind_memory(self.placement) {
            // SAFETY: `ptr` is a fresh allocation of `bytes` bytes that nothing else refers to
            // yet; `MaybeUninit<u8>` has no validity requirement, and hwloc only passes the
            // address range to the kernel (it neither reads nor writes the bytes).
            let area: &[MaybeUninit<u8>] =
                unsafe { std::slice::from_raw_parts(ptr.as_ptr().cast::<MaybeUninit<u8>>(), bytes) };
            topology
                .hwloc()
                .bind_memory_area(area, &nodeset, policy, MemoryBindingFlags::empty())
                .map_err(|e| e.to_string())
        } else {
            Err(unsupported(topology))
        };
        if let Err(reason) = outcome {
            BINDING_FAILURES.fetch_add(1, Ordering::Relaxed);
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "hoplite-numa: memory placement {:?} is not possible here ({reason}); such allocations stay unbound (NumaMemory::binding_failures counts them)",
                    self.placement
                );
            });
        }
    }
}

static BINDING_FAILURES: AtomicUsize = AtomicUsize::new(0);

fn live() -> &'static Mutex<BTreeMap<Placement, usize>> {
    static LIVE: OnceLock<Mutex<BTreeMap<Placement, usize>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// The layout of a `bytes`-byte allocation: page-aligned from one page up.
fn layout_for(bytes: usize) -> std::result::Result<Layout, std::alloc::LayoutError> {
    let align = if bytes >= PAGE {
        PAGE
    } else {
        NumaMemory::ALIGNMENT
    };
    Layout::from_size_align(bytes, align)
}

// SAFETY: `allocate` returns memory from the global allocator valid for `bytes` bytes, aligned
// to at least 64 bytes (`layout_for`), unshared until `deallocate`; zero bytes give a dangling
// pointer that is never dereferenced. Binding changes where pages live, never their contents
// or validity. `allocate_zeroed` uses `alloc_zeroed`.
unsafe impl MemorySpace for NumaMemory {
    const ALIGNMENT: usize = 64;
    const HOST_ACCESSIBLE: bool = true;

    fn name(&self) -> &'static str {
        crate::MEMORY_NAME
    }

    fn allocate(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
        self.alloc(label, bytes, false)
    }

    fn allocate_zeroed(&self, label: &str, bytes: usize) -> Result<NonNull<u8>> {
        self.alloc(label, bytes, true)
    }

    fn records(&self) -> &'static AllocationRecords {
        static RECORDS: AllocationRecords = AllocationRecords::new();
        &RECORDS
    }

    /// The tracked allocations, then the live bytes per placement (per node, interleaved,
    /// first touch).
    fn print_records(&self, out: &mut dyn std::io::Write, detail: bool) -> std::io::Result<()> {
        self.records().print(out, self.name(), detail)?;
        for (placement, bytes) in NumaMemory::live_bytes() {
            let place = match placement {
                Placement::FirstTouch => "first touch".to_owned(),
                Placement::Node(k) => format!("bound to node {k}"),
                Placement::Interleave => "interleaved".to_owned(),
            };
            writeln!(out, "  {place}: {bytes} bytes live")?;
        }
        Ok(())
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
        if bytes == 0 {
            return;
        }
        if let Ok(layout) = layout_for(bytes) {
            // SAFETY: the caller guarantees `ptr` came from `allocate` of an equal space with
            // these `bytes`, which used exactly this layout.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
            let mut live = live().lock();
            if let Some(total) = live.get_mut(&self.placement) {
                *total = total.saturating_sub(bytes);
                if *total == 0 {
                    live.remove(&self.placement);
                }
            }
        }
    }
}

// SAFETY: NUMA memory is ordinary host memory of this process; binding only moves pages
// between nodes, every host thread can read and write all of it.
unsafe impl HostAccessibleSpace for NumaMemory {}

// SAFETY: a space is assignable from itself.
unsafe impl MemorySpaceAccess<NumaMemory> for NumaMemory {
    const ASSIGNABLE: bool = true;
    const ACCESSIBLE: bool = true;
    const DEEPCOPY: bool = true;
}

// SAFETY: both are host memory in one address space: NUMA memory can read host memory
// directly. Not assignable: a view's placement is part of its type.
unsafe impl MemorySpaceAccess<HostSpace> for NumaMemory {
    const ASSIGNABLE: bool = false;
    const ACCESSIBLE: bool = true;
    const DEEPCOPY: bool = true;
}

// SAFETY: as above, the other way round.
unsafe impl MemorySpaceAccess<NumaMemory> for HostSpace {
    const ASSIGNABLE: bool = false;
    const ACCESSIBLE: bool = true;
    const DEEPCOPY: bool = true;
}

/// What hwloc reports about the pages of a view (`area_memory_binding`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AreaBinding {
    /// Logical indices of the nodes the pages are bound to.
    pub nodes: Vec<usize>,
    /// The policy, when all pages have the same.
    pub policy: Option<AreaPolicy>,
    /// Logical indices of the nodes the pages are on now (hwloc `area_memory_location`; pages
    /// not touched yet are on none), or `None` where the system cannot say.
    pub located_on: Option<Vec<usize>>,
}

/// A memory binding policy as hwloc reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AreaPolicy {
    /// Pages go where first touched (the default).
    FirstTouch,
    /// Pages are bound to the nodes.
    Bind,
    /// Pages are interleaved over the nodes.
    Interleave,
    /// Another policy (next-touch, weighted interleave).
    Other,
}

/// The binding the pages of `view` actually have, and where they are, as hwloc reports it for
/// the area: the check that a [`Placement`] took effect.
///
/// ```
/// use hoplite_core::{LayoutRight, View};
/// use hoplite_numa::{AreaPolicy, NumaMemory, NumaTopology, memory_binding};
/// let topo = NumaTopology::discover()?;
/// let v: View<f64, 1, LayoutRight, NumaMemory> = View::new_in(NumaMemory::bound_to(&topo, 0)?, "x", [1 << 16])?;
/// let binding = memory_binding(&topo, &v)?;
/// // Bound where the system supports it; where it does not, the first-touch default shows.
/// assert!(matches!(binding.policy, Some(AreaPolicy::Bind | AreaPolicy::FirstTouch) | None));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`NumaError::NoBindingReport`] on a synthetic topology, for an empty or non-contiguous
/// view, a view with a live writer, or when the system cannot query area bindings.
pub fn memory_binding<T: ViewValue, const R: usize, L: ArrayLayout>(
    topology: &NumaTopology,
    view: &View<T, R, L, NumaMemory>,
) -> std::result::Result<AreaBinding, NumaError> {
    let no = |reason: String| NumaError::NoBindingReport {
        label: view.label().to_owned(),
        reason,
    };
    if !topology.can_bind() {
        return Err(no(
            "the topology is synthetic; its nodes have no memory to ask about".to_owned(),
        ));
    }
    let read = view.host_read().map_err(|e| no(e.to_string()))?;
    let slice = read
        .as_slice()
        .ok_or_else(|| no("the view is not contiguous".to_owned()))?;
    if slice.is_empty() {
        return Err(no("the view is empty".to_owned()));
    }
    let (set, policy) = topology
        .hwloc()
        .area_memory_binding::<[T], NodeSet>(slice, MemoryBindingFlags::empty())
        .map_err(|e| no(e.to_string()))?;
    let nodes = topology.nodes_in(&set).into_iter().collect();
    let located_on = topology
        .hwloc()
        .area_memory_location::<[T], NodeSet>(slice, MemoryBindingFlags::empty())
        .ok()
        .map(|set| topology.nodes_in(&set));
    let policy = policy.map(|p| match p {
        MemoryBindingPolicy::FirstTouch => AreaPolicy::FirstTouch,
        MemoryBindingPolicy::Bind => AreaPolicy::Bind,
        MemoryBindingPolicy::Interleave => AreaPolicy::Interleave,
        _ => AreaPolicy::Other,
    });
    Ok(AreaBinding {
        nodes,
        policy,
        located_on,
    })
}

/// Why a topology cannot bind memory.
fn unsupported(topology: &NumaTopology) -> String {
    if topology.can_bind() {
        "hwloc cannot bind memory areas with this policy on this system".to_owned()
    } else {
        "the topology is synthetic: there are no such nodes to bind to".to_owned()
    }
}
