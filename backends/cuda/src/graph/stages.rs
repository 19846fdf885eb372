//! The stages of a [`CudaGraph`](super::CudaGraph): which CUDA graph, or which turn on the
//! submitting thread between them, runs each node, so that host nodes run on the host between
//! the device nodes they follow and precede, and every edge is kept.

/// What a node is to the stages: host work, device work, or nothing to run (the root, a
/// join, an empty launch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StageKind {
    Host,
    Device,
    Empty,
}

/// The stage of each node, for nodes given in id order as (kind, predecessors): a host node
/// runs in the stage of its latest predecessor, after that stage's CUDA graph; a device node
/// runs in the CUDA graph of the stage of its latest predecessor, or of the next stage if that
/// predecessor is (or joins) a host node of its stage. An empty node has nothing to run, so it
/// only passes its predecessors' place on: it stays in its latest predecessor's stage (in the
/// graph, an edge-free stand-in) and counts as after that stage's host nodes if one of its
/// predecessors does, so a join of host nodes does not start a stage of its own. Every node's
/// stage is at least its predecessors' and a device node's is past the host work it follows,
/// so running the stages in order, each graph before its host nodes (in id order), keeps
/// every edge.
pub(super) fn stages<'a>(nodes: impl IntoIterator<Item = (StageKind, &'a [usize])>) -> Vec<usize> {
    let mut stage: Vec<usize> = Vec::new();
    // Whether the node is, or follows, host work of its own stage.
    let mut after_host: Vec<bool> = Vec::new();
    for (kind, preds) in nodes {
        let preds: Vec<usize> = preds.iter().copied().filter(|&p| p < stage.len()).collect();
        let latest = |bump: bool| {
            preds
                .iter()
                .map(|&p| stage[p] + usize::from(bump && after_host[p]))
                .max()
                .unwrap_or(0)
        };
        let (s, after) = match kind {
            StageKind::Host => (latest(false), true),
            StageKind::Device => (latest(true), false),
            StageKind::Empty => {
                let s = latest(false);
                (s, preds.iter().any(|&p| stage[p] == s && after_host[p]))
            }
        };
        stage.push(s);
        after_host.push(after);
    }
    stage
}

#[cfg(test)]
mod tests {
    use super::StageKind::{self, Device, Empty, Host};
    use super::stages;

    /// The stages of nodes given as (kind, predecessors).
    fn of(nodes: &[(StageKind, &[usize])]) -> Vec<usize> {
        stages(nodes.iter().map(|&(kind, preds)| (kind, preds)))
    }

    /// Whether running the stages in order, each CUDA graph before its host nodes in id
    /// order, runs every node that has work after the nodes with work it depends on, directly
    /// or through empty nodes (which run nothing, so only the order through them counts).
    fn keeps_edges(nodes: &[(StageKind, Vec<usize>)], stage: &[usize]) -> bool {
        // A node's position in the run: its stage, the graph (0) before the host nodes (1),
        // then its id (host nodes run in id order; within a graph the edges order them).
        let place = |i: usize| (stage[i], usize::from(nodes[i].0 == Host), i);
        // The nodes with work each node depends on, looking through empty nodes.
        let mut working: Vec<Vec<usize>> = Vec::new();
        for (_, preds) in nodes {
            let mut found = Vec::new();
            for &p in preds {
                if nodes[p].0 == Empty {
                    found.extend(working[p].iter().copied());
                } else {
                    found.push(p);
                }
            }
            working.push(found);
        }
        nodes
            .iter()
            .enumerate()
            .filter(|(_, (kind, _))| *kind != Empty)
            .all(|(n, (kind, _))| {
                working[n].iter().all(|&p| {
                    let (before, after) = (place(p), place(n));
                    if *kind == Host || nodes[p].0 == Host {
                        before < after
                    } else {
                        // Two device nodes: the same graph (a path of edges there) or a later stage.
                        before.0 <= after.0
                    }
                })
            })
    }

    #[test]
    fn a_graph_without_host_nodes_is_one_stage() {
        assert_eq!(
            of(&[(Empty, &[]), (Device, &[0]), (Device, &[0]), (Device, &[1, 2])]),
            [0; 4]
        );
    }

    #[test]
    fn device_nodes_after_a_host_node_go_to_the_next_stage() {
        // kernel -> host -> kernel -> host -> kernel
        let chain = of(&[
            (Device, &[]),
            (Host, &[0]),
            (Device, &[1]),
            (Host, &[2]),
            (Device, &[3]),
        ]);
        assert_eq!(chain, [0, 0, 1, 1, 2]);
        // A host node after a host node stays in its stage; a kernel beside the host node
        // (not after it) stays in the first.
        let wide = of(&[
            (Device, &[]),
            (Host, &[0]),
            (Host, &[1]),
            (Device, &[0]),
            (Device, &[2, 3]),
        ]);
        assert_eq!(wide, [0, 0, 0, 0, 1]);
        // A host node waiting for a kernel of stage 1 runs after stage 1's graph.
        let late = of(&[(Host, &[]), (Device, &[0]), (Host, &[1])]);
        assert_eq!(late, [0, 1, 1]);
    }

    #[test]
    fn joins_pass_their_predecessors_place_on_without_a_stage_of_their_own() {
        // root -> two host nodes -> join -> host: one stage, no graph launch for the join.
        let hosts = of(&[
            (Empty, &[]),
            (Host, &[0]),
            (Host, &[0]),
            (Empty, &[1, 2]),
            (Host, &[3]),
        ]);
        assert_eq!(hosts, [0; 5]);
        // A kernel after a join of host nodes still waits for them: the next stage.
        let kernel = of(&[(Empty, &[]), (Host, &[0]), (Empty, &[1]), (Device, &[2])]);
        assert_eq!(kernel, [0, 0, 0, 1]);
        // A join of kernels only keeps the kernel after it in the same graph.
        let kernels = of(&[
            (Empty, &[]),
            (Device, &[0]),
            (Device, &[0]),
            (Empty, &[1, 2]),
            (Device, &[3]),
        ]);
        assert_eq!(kernels, [0; 5]);
        // A join of a later stage's kernel and an earlier host node: only the stage's own
        // host work counts (the earlier stage's ran before this stage's graph).
        let mixed = of(&[(Host, &[]), (Device, &[0]), (Empty, &[0, 1]), (Device, &[2])]);
        assert_eq!(mixed, [0, 1, 1, 1]);
    }

    #[test]
    fn random_graphs_keep_every_edge() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..1000 {
            let n = 1 + (next() % 24) as usize;
            let nodes: Vec<(StageKind, Vec<usize>)> = (0..n)
                .map(|i| {
                    let kind = match next() % 4 {
                        0 => Host,
                        1 => Empty,
                        _ => Device,
                    };
                    let preds = (0..i).filter(|_| next() % 4 == 0).collect();
                    (kind, preds)
                })
                .collect();
            let stage = stages(nodes.iter().map(|(kind, preds)| (*kind, preds.as_slice())));
            assert!(keeps_edges(&nodes, &stage), "{nodes:?} staged as {stage:?}");
            let hosts = nodes.iter().filter(|(kind, _)| *kind == Host).count();
            assert!(
                stage.iter().all(|&s| s <= hosts),
                "at most one stage per host node"
            );
        }
    }
}
