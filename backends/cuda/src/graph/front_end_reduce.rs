//! Reduce and scan nodes of the generic builder (`then_parallel_reduce`,
//! `then_parallel_scan`) in a [`CudaGraph`](super::CudaGraph): the node's `#[kernel]` launch
//! packed as the eager reduction packs it, and a host step that joins the partials with the
//! node's own reducer (typed back from its `DynReducer`) and stores the value through the
//! node, found in the node list the submit lends.

use std::any::TypeId;
use std::marker::PhantomData;
use std::sync::Arc;

use hoplite_core::device_kernel::{DeviceJoin, DeviceKernelInfo, DeviceLaunch, DynReducer};
use hoplite_core::{Reducer, ScanValue};
use hoplite_graph::{DevicePolicy, NodeKernel, NodeResult};

use super::Geometry;
use super::host::SubmitList;
use super::kernel::{checked_mdrange_of_any_rank, range_plan, team_plan};
use super::reduce::{PartialsJoin, ReduceNode, prefix_in_place, reduction, scan};
use crate::dispatch::{device_args, no_device_value, no_scan_value, with_device_values, with_scan_values};
use crate::geometry::mdrange_geometry_in;
use crate::launch::{DeviceArg, reduce_mdrange_order};
use crate::params::IterationArgs;
use crate::reduce::{DeviceReduceValue, decode, join_partials, walk_for};
use crate::{Cuda, CudaError};

/// A reducer seen through its [`DynReducer`], typed back to its value type `V` (which
/// [`NodeReducer::new`] checks): what packs a front-end reduce node and joins its partials.
struct NodeReducer<'r, V> {
    reducer: &'r dyn DynReducer,
    value: PhantomData<fn() -> V>,
}

impl<'r, V: 'static> NodeReducer<'r, V> {
    /// `None` unless `V` is the reducer's value type.
    fn new(reducer: &'r dyn DynReducer) -> Option<Self> {
        (reducer.value_type() == TypeId::of::<V>()).then_some(NodeReducer {
            reducer,
            value: PhantomData,
        })
    }
}

impl<V: Send + 'static> Reducer for NodeReducer<'_, V> {
    type Value = V;

    fn init(&self) -> V {
        let mut identity = None;
        self.reducer.init_into(&mut identity);
        identity.unwrap_or_else(|| unreachable!("`NodeReducer::new` checked the value type"))
    }

    fn join(&self, dst: &mut V, src: V) {
        self.reducer.join_any(dst, &mut Some(src));
    }

    fn finalize(&self, value: &mut V) {
        self.reducer.finalize_any(value);
    }

    fn is_commutative(&self) -> bool {
        self.reducer.commutative()
    }

    fn device_join(&self) -> Option<DeviceJoin> {
        self.reducer.join_on_device()
    }
}

/// The result step of a front-end node (`hoplite_graph::NodeResult`), from the node list of
/// the submit in progress.
fn with_node_result<T>(
    list: &SubmitList,
    id: usize,
    f: impl FnOnce(&str, &dyn NodeResult) -> hoplite_core::Result<T>,
) -> hoplite_core::Result<T> {
    list.with_node(id, |node| match node.device_result() {
        Some(result) => f(node.label(), result),
        None => Err(CudaError::InvalidGraph {
            reason: format!("node {id} (`{}`) has no reduction or scan result", node.label()),
        }
        .into()),
    })
}

/// The join of a front-end reduce node of values `V`: the partials joined with the node's own
/// reducer, as the eager reduction joins them, and stored where the node stores its value.
struct FrontEndJoin<V> {
    id: usize,
    list: Arc<SubmitList>,
    value: PhantomData<fn() -> V>,
}

impl<V: DeviceReduceValue + 'static> PartialsJoin for FrontEndJoin<V> {
    fn join(&self, partials: &mut [u8]) -> hoplite_core::Result<()> {
        with_node_result(&self.list, self.id, |label, result| {
            let reducer =
                result
                    .reducer()
                    .and_then(NodeReducer::<V>::new)
                    .ok_or_else(|| CudaError::InvalidGraph {
                        reason: format!(
                            "node `{label}` no longer reduces `{}`",
                            std::any::type_name::<V>()
                        ),
                    })?;
            let value = join_partials(&reducer, decode::<V>(partials));
            result.store(label, &mut Some(value))
        })
    }
}

/// The host step of a front-end scan node of `T`: the chunk sums become their prefixes, and
/// the total is stored where the node stores it.
struct FrontEndPrefixer<T> {
    id: usize,
    list: Arc<SubmitList>,
    value: PhantomData<fn() -> T>,
}

impl<T: DeviceReduceValue + ScanValue> PartialsJoin for FrontEndPrefixer<T> {
    fn join(&self, partials: &mut [u8]) -> hoplite_core::Result<()> {
        with_node_result(&self.list, self.id, |label, result| {
            let total = prefix_in_place::<T>(partials);
            result.store(label, &mut Some(total))
        })
    }
}

/// The reduction node of a front-end reduce or scan node (`then_parallel_reduce` /
/// `then_parallel_scan` of the generic builder) whose kernel is a `#[kernel]`'s `with`,
/// checked and packed as the eager launch is; its host step joins with the node's reducer and
/// stores through the node, which it finds by `id` in the node list `list` lends at submit.
/// `None` for a closure.
pub(super) fn front_end_reduction(
    node: &dyn NodeKernel<Cuda>,
    id: usize,
    list: &Arc<SubmitList>,
) -> Result<Option<ReduceNode>, CudaError> {
    let Some(result) = node.device_result() else {
        return Ok(None);
    };
    let mut made = None;
    node.describe_device_launch(&mut |launch, policy| {
        made = Some(reduction_of(&launch, &policy, result, id, list));
    });
    made.transpose()
}

fn reduction_of(
    launch: &DeviceLaunch<'_>,
    policy: &DevicePolicy<'_, Cuda>,
    result: &dyn NodeResult,
    id: usize,
    list: &Arc<SubmitList>,
) -> Result<ReduceNode, CudaError> {
    let args = device_args(launch)?;
    let k = launch.kernel;
    let Some(reducer) = result.reducer() else {
        let DevicePolicy::Range(range) = policy else {
            return Err(CudaError::InvalidLaunch {
                kernel: k.name,
                reason: "a scan runs over a RangePolicy".into(),
            });
        };
        macro_rules! scan_as {
            (; $($t:ty),*) => {$(
                if result.value_type() == TypeId::of::<$t>() {
                    let join = Arc::new(FrontEndPrefixer::<$t> { id, list: list.clone(), value: PhantomData });
                    return Ok(scan::<$t>(k, range.begin()..range.end(), &args, join)?
                        .with_occupancy(range.desired_occupancy()));
                }
            )*};
        }
        with_scan_values!(scan_as!());
        return Err(no_scan_value(k.name, result.value_name()));
    };
    macro_rules! reduce_as {
        (; $($t:ty),*) => {$(
            if let Some(typed) = NodeReducer::<$t>::new(reducer) {
                return Ok(reduction_over::<$t>(k, policy, &args, typed, id, list)?
                    .with_occupancy(policy.desired_occupancy()));
            }
        )*};
    }
    with_device_values!(reduce_as!());
    Err(no_device_value(k.name, result.value_name()))
}

/// [`reduction_of`] for a reducer of values `V`.
fn reduction_over<V: DeviceReduceValue + 'static>(
    k: DeviceKernelInfo,
    policy: &DevicePolicy<'_, Cuda>,
    args: &[DeviceArg],
    reducer: NodeReducer<'_, V>,
    id: usize,
    list: &Arc<SubmitList>,
) -> Result<ReduceNode, CudaError> {
    let (iteration, ends, geometry): (IterationArgs, Vec<u64>, Geometry) = match policy {
        DevicePolicy::Range(range) => range_plan(&k, range.begin()..range.end())?,
        DevicePolicy::MdRange {
            begin,
            end,
            tiles,
            outer_order,
            inner_order,
            nested_order,
            ..
        } => {
            // As the eager reduction: a reducer that is not commutative joins in the order of
            // nested loops, which a device walk gives only for a policy that visits so.
            if !reducer.is_commutative() && !nested_order {
                return Err(CudaError::UnorderedReduction {
                    kernel: k.name,
                    reducer: reducer.reducer.reducer_name(),
                    tiles: format!("{tiles:?} walked {outer_order:?}"),
                    order: format!("{inner_order:?}"),
                });
            }
            let checked = checked_mdrange_of_any_rank(&k, begin, end, args)?;
            let (iteration, ends, (lengths, order)) =
                reduce_mdrange_order(checked, walk_for(&reducer), *inner_order);
            let geometry: Geometry =
                Box::new(move |limits, _| Ok(mdrange_geometry_in(limits, &lengths, order)));
            (iteration, ends, geometry)
        }
        DevicePolicy::Team(team) => team_plan(&k, team)?,
    };
    let join = |_| -> Arc<dyn PartialsJoin> {
        Arc::new(FrontEndJoin::<V> {
            id,
            list: list.clone(),
            value: PhantomData,
        })
    };
    reduction(k, iteration, &ends, args, reducer, geometry, join)
}

#[cfg(test)]
mod tests {
    use std::any::Any;

    use hoplite_core::held::Access;
    use hoplite_core::{MinLoc, ValLoc};
    use hoplite_graph::{GraphNodes, NodeKind};
    use parking_lot::Mutex;

    use super::*;
    use crate::reduce::encode;

    /// A reduce (or, without a reducer, scan) node as the front end makes one, reduced to its
    /// result step: the node list a submit lends is what the joins below run from.
    struct ResultNode<R: Reducer> {
        reducer: Option<R>,
        stored: Mutex<Option<R::Value>>,
    }

    impl<R: Reducer<Value: 'static>> NodeResult for ResultNode<R> {
        fn value_type(&self) -> TypeId {
            TypeId::of::<R::Value>()
        }
        fn value_name(&self) -> &'static str {
            std::any::type_name::<R::Value>()
        }
        fn reducer(&self) -> Option<&dyn DynReducer> {
            self.reducer.as_ref().map(|r| r as &dyn DynReducer)
        }
        fn store(&self, _label: &str, value: &mut dyn Any) -> hoplite_core::Result<()> {
            *self.stored.lock() = value.downcast_mut::<Option<R::Value>>().and_then(Option::take);
            Ok(())
        }
    }

    impl<R: Reducer<Value: 'static>> NodeKernel<Cuda> for ResultNode<R> {
        fn label(&self) -> &str {
            "result"
        }
        fn kind(&self) -> NodeKind {
            if self.reducer.is_some() {
                NodeKind::Reduce
            } else {
                NodeKind::Scan
            }
        }
        fn accesses(&self) -> &[Access] {
            &[]
        }
        fn work(&self) -> Option<usize> {
            None
        }
        fn run(&self) -> hoplite_core::Result<()> {
            Ok(())
        }
        fn run_on(&self, _space: &Cuda) -> hoplite_core::Result<()> {
            Ok(())
        }
        fn device_result(&self) -> Option<&dyn NodeResult> {
            Some(self)
        }
    }

    fn lent<R: Reducer<Value: 'static> + 'static>(
        node: Arc<ResultNode<R>>,
    ) -> (GraphNodes<Cuda>, Arc<SubmitList>) {
        let mut nodes = GraphNodes::new();
        nodes.add(node, &[]).expect("a root node");
        (nodes, Arc::default())
    }

    #[test]
    fn a_front_end_join_folds_the_partials_with_the_nodes_reducer_and_stores_through_it() {
        let node = Arc::new(ResultNode {
            reducer: Some(MinLoc::<f64>::new()),
            stored: Mutex::new(None),
        });
        let (nodes, list) = lent(node.clone());
        let join = FrontEndJoin::<ValLoc<f64>> {
            id: 0,
            list: list.clone(),
            value: PhantomData,
        };
        let partials = [
            ValLoc {
                val: 3.0,
                loc: Some(2),
            },
            ValLoc {
                val: 1.0,
                loc: Some(7),
            },
            ValLoc {
                val: 1.0,
                loc: Some(9),
            },
        ];
        let e = join
            .join(&mut encode(&partials))
            .expect_err("no node list is lent outside a submit");
        assert!(e.to_string().contains("without its graph's node list"), "{e}");
        let lease = list.lease(&nodes);
        join.join(&mut encode(&partials)).expect("joins");
        let min = node.stored.lock().expect("stored");
        assert_eq!(
            (min.val, min.loc),
            (1.0, Some(7)),
            "the first minimum, in partials order"
        );
        drop(lease);
        let _lease = list.lease(&nodes);

        // A join typed for another value finds the node's reducer does not match.
        let wrong = FrontEndJoin::<f64> {
            id: 0,
            list: list.clone(),
            value: PhantomData,
        };
        let e = wrong
            .join(&mut encode(&[1.0f64]))
            .expect_err("the node reduces ValLoc<f64>");
        assert!(e.to_string().contains("no longer reduces `f64`"), "{e}");
    }

    #[test]
    fn a_front_end_prefixer_writes_the_prefixes_and_stores_the_total() {
        let node: Arc<ResultNode<hoplite_core::Sum<i64>>> = Arc::new(ResultNode {
            reducer: None,
            stored: Mutex::new(None),
        });
        let (nodes, list) = lent(node.clone());
        let _lease = list.lease(&nodes);
        let prefixer = FrontEndPrefixer::<i64> {
            id: 0,
            list: list.clone(),
            value: PhantomData,
        };
        let mut sums = encode(&[4i64, 1, 5]);
        prefixer.join(&mut sums).expect("prefixes");
        assert_eq!(decode::<i64>(&sums).collect::<Vec<_>>(), [0, 4, 5]);
        assert_eq!(*node.stored.lock(), Some(10));
    }

    #[test]
    fn a_node_reducer_is_made_only_for_its_value_type() {
        let sum = hoplite_core::Sum::<f32>::new();
        assert!(NodeReducer::<f64>::new(&sum).is_none());
        let typed = NodeReducer::<f32>::new(&sum).expect("f32");
        assert_eq!(join_partials(&typed, [1.5f32, 2.5]), 4.0);
        assert_eq!(typed.device_join(), Some(DeviceJoin::Sum));
        assert!(typed.is_commutative());
    }
}
