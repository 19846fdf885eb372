//! The node list under the front end, labels, and the DOT export.

use super::*;

#[test]
fn dot_export_has_labels_and_edges() {
    let y: View<f64, 1> = View::new("y \"quoted\"", [4]).expect("y");
    let graph = create_graph(&Serial::default(), |g| {
        let a = g.parallel_for("produce", (4usize, (y.write(),)), |(i, (y,))| y.set(i, 1.0));
        let b = g.host("side", || {});
        g.when_all([a.erase(), b.erase()]).then_parallel_for(
            "consume",
            (4usize, (y.read(),)),
            |(i, (y,))| {
                let _ = y.get(i);
            },
        );
    })
    .expect("graph");
    let dot = graph.to_dot();
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(
        dot.contains("produce\\nparallel_for\\nW y \\\"quoted\\\""),
        "{dot}"
    );
    assert!(dot.contains("consume\\nparallel_for\\nR y"), "{dot}");
    assert!(
        dot.contains("shape=diamond") && dot.contains("shape=hexagon"),
        "{dot}"
    );
    for edge in ["n0 -> n1", "n0 -> n2", "n1 -> n3", "n2 -> n3", "n3 -> n4"] {
        assert!(dot.contains(edge), "{edge} missing in\n{dot}");
    }
}

/// A host node made outside the front end, for driving a node list directly.
struct Named(&'static str, NodeKind);

impl NodeKernel<Serial> for Named {
    fn label(&self) -> &str {
        self.0
    }
    fn kind(&self) -> NodeKind {
        self.1
    }
    fn accesses(&self) -> &[Access] {
        &[]
    }
    fn work(&self) -> Option<usize> {
        None
    }
    fn run(&self) -> Result<(), Error> {
        Ok(())
    }
    fn run_on(&self, _space: &Serial) -> Result<(), Error> {
        Ok(())
    }
}

/// A node list refuses a predecessor that is not an earlier node, and adds nothing then.
#[test]
fn a_node_list_refuses_a_later_predecessor() {
    let mut nodes = GraphNodes::<Serial>::new();
    let root = nodes
        .add(Arc::new(Named("root", NodeKind::Root)), &[])
        .expect("the root");
    let a: Arc<dyn NodeKernel<Serial>> = Arc::new(Named("a", NodeKind::Host));
    match nodes.add(a.clone(), &[root, NodeId(1)]) {
        Err(GraphError::InvalidPredecessor {
            node: 1,
            predecessor: 1,
        }) => {}
        other => panic!("expected InvalidPredecessor, got {:?}", other.map(|id| id.0)),
    }
    assert_eq!(nodes.len(), 1);
    let id = nodes.add(a.clone(), &[root]).expect("a node after the root");
    assert_eq!(nodes.preds(id), [root]);
    assert_eq!(nodes.node(id).label(), "a");
    assert_eq!(nodes.as_slice()[1].kind(), NodeKind::Host);
    drop(nodes);
    assert_eq!(
        Arc::strong_count(&a),
        1,
        "the list released the node it was given"
    );
}

/// Every node keeps its own label when labels repeat and alternate (nodes of one label share
/// one stored copy), and dropping the graph drops every node's closure exactly once.
#[test]
fn nodes_keep_their_labels_and_drop_with_the_graph() {
    let captured = Arc::new(());
    let labels = ["a", "a", "b", "a", "", "b", "b"];
    let graph = create_graph(&Serial::default(), |g| {
        let mut last = g.root();
        for (k, label) in labels.iter().enumerate() {
            let c = captured.clone();
            last = if k % 2 == 0 {
                last.then_host(label, move || drop(c.clone())).erase()
            } else {
                last.then_parallel_for(label, 1, move |_i| drop(c.clone()))
                    .erase()
            };
        }
    })
    .expect("graph");
    let got: Vec<&str> = graph.nodes().as_slice()[1..].iter().map(|n| n.label()).collect();
    assert_eq!(got, labels);
    assert_eq!(Arc::strong_count(&captured), 1 + labels.len());
    drop(graph);
    assert_eq!(
        Arc::strong_count(&captured),
        1,
        "each node's closure dropped once"
    );
}

/// What a device graph holds for a submit: every launch node's handles at once, in one borrow
/// group, so a node writing `y` and the later node reading it do not refuse each other, while
/// the host is kept out until the held handles drop, and a borrow held outside the group
/// refuses the submit.
#[test]
fn a_submit_holds_every_launch_nodes_handles_in_one_group() {
    let y: View<f64, 1> = View::new("y", [4]).expect("y");
    let z: View<f64, 1> = View::new("z", [4]).expect("z");
    let mut graph = create_graph(&Serial::default(), |g| {
        g.parallel_for("produce", (4usize, (y.write(),)), |(i, (y,))| y.set(i, 1.0))
            .then_parallel_for("consume", (4usize, (y.read(), z.write())), |(i, (y, z))| {
                z.set(i, y.get(i))
            });
    })
    .expect("graph");
    let hold = |group: &hoplite_core::held::BorrowGroup| {
        let mut held = Vec::new();
        for entry in graph.nodes().as_slice() {
            // SAFETY: the handles are only held, never used, and dropped before `group`.
            if let Some(handles) = unsafe { entry.hold_handles_in(group) }? {
                held.push(handles);
            }
        }
        Ok::<_, Error>(held)
    };
    let group = hoplite_core::held::BorrowGroup::new();
    let held = hold(&group).expect("a writer and a later reader of `y` share the group");
    assert_eq!(held.len(), 2, "both launch nodes hold handles");
    assert!(y.host_read().is_err(), "the held writer keeps the host out");
    assert!(z.host_write().is_err(), "and so does the held writer of `z`");
    drop(held);
    assert!(y.host_read().is_ok() && z.host_write().is_ok());

    let reader = y.read();
    let e = hold(&hoplite_core::held::BorrowGroup::new()).expect_err("a reader outside the group");
    assert!(matches!(e, Error::BorrowConflict { .. }), "{e:?}");
    drop(reader);
    graph.submit().expect("the graph still runs");
    assert_eq!(z.to_vec().expect("z"), [1.0; 4]);
}
