//! Communication as DAG vertices: a receive overlaps an independent kernel, a kernel that
//! reads the received view waits for it, a halo exchange orders the kernels that read ghosts,
//! and failures reach the vertices that depend on them; on 2 and 4 ranks.

mod support;

use hoplite_core::{RangePolicy, View};
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions, Execution, VertexState};
use hoplite_mpi::{CommExt, Error, Halo, Mpi};
use hoplite_serial::Serial;

#[test]
fn dag_on_2_ranks() {
    support::run_ranks("rank_dag", 2);
}

#[test]
fn dag_on_4_ranks() {
    support::run_ranks("rank_dag", 4);
}

fn context() -> Result<Context<HostDevice<Serial>>, Error> {
    let device = HostDevice::partitioned("cpu", &Serial::default(), 4)?;
    Ok(Context::new(
        vec![device],
        ContextOptions::default().execution(Execution::Async),
    )?)
}

#[test]
#[ignore = "a rank of `dag_on_*_ranks`, run under mpirun"]
fn rank_dag() {
    if !support::is_rank() {
        println!("skipped: runs only as a rank under mpirun (see dag_on_2_ranks)");
        return;
    }
    // A failed check panics, and the panic aborts every rank (see `support::is_rank`).
    dag_checks().expect("the rank's checks");
}

fn dag_checks() -> Result<(), Error> {
    let mpi = Mpi::init()?;
    let world = mpi.world();
    let rank = world.rank();
    let partner = rank ^ 1;
    let n = 4096;
    let go: View<u8, 1> = View::new("go", [1])?;

    // Overlap: the receiver's message is sent only after its independent kernel has finished,
    // so that kernel can finish only if it ran while the receive vertex was waiting.
    let incoming: View<f64, 1> = View::new("incoming", [n])?;
    if rank % 2 == 0 {
        world.recv(&go, partner, 2)?;
        incoming
            .host_write()?
            .as_mut_slice()
            .expect("contiguous")
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = i as f64);
        world.send(&incoming, partner, 1)?;
    } else {
        let ctx = context()?;
        let other: View<f64, 1> = View::new("other", [n])?;
        let doubled: View<f64, 1> = View::new("doubled", [n])?;
        let range = || RangePolicy::new(Serial::default(), 0..n);
        let recv = ctx.recv("receive", &world, &incoming, partner, 1)?;
        let independent = ctx.launch("independent", (range(), (other.write(),)), |(i, (o,))| {
            o.set(i, 2.0)
        })?;
        let dependent = ctx.launch(
            "dependent",
            (range(), (doubled.write(), incoming.read())),
            |(i, (d, x))| d.set(i, 2.0 * x.get(i)),
        )?;
        assert!(
            incoming.host_read().is_err(),
            "the receive holds the view as a writer"
        );
        independent.wait()?;
        assert!(
            !recv.is_finished(),
            "the receive is still waiting for its message"
        );
        assert!(
            matches!(dependent.state(), VertexState::Queued),
            "the kernel that reads the received view waits for the receive: {:?}",
            dependent.state()
        );
        world.send(&go, partner, 2)?;
        recv.wait()?;
        ctx.synchronize()?;
        assert_eq!(other.to_vec()?, vec![2.0; n]);
        let d = doubled.to_vec()?;
        assert!(
            d.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f64),
            "the dependent kernel saw the whole message"
        );
    }
    world.barrier()?;

    // A send vertex, ordered after the kernel that fills its view.
    let payload: View<i64, 1> = View::new("payload", [n])?;
    if rank % 2 == 0 {
        let ctx = context()?;
        ctx.launch(
            "fill",
            (RangePolicy::new(Serial::default(), 0..n), (payload.write(),)),
            |(i, (p,))| p.set(i, 3 * *i as i64),
        )?;
        let send = ctx.send("send", &world, &payload, partner, 3)?;
        send.wait()?;
    } else {
        world.recv(&payload, partner, 3)?;
        assert!(
            payload
                .to_vec()?
                .iter()
                .enumerate()
                .all(|(i, &v)| v == 3 * i as i64),
            "sent after the fill"
        );
    }

    // A halo exchange as vertices, then a kernel that reads the ghosts.
    let halo = Halo::<1>::new(&world, [0], [true], 1)?;
    let size = world.size() as usize;
    let local = 8;
    let u: View<f64, 1> = View::new("u", [local + 2])?;
    let seen: View<f64, 1> = View::new("seen", [local + 2])?;
    {
        let mut w = u.host_write()?;
        for i in 0..local {
            w.set(i + 1, (halo.coords()[0] * local + i) as f64);
        }
    }
    let ctx = context()?;
    ctx.halo_exchange("halo", &halo, &u)?;
    ctx.launch(
        "copy",
        (
            RangePolicy::new(Serial::default(), 0..local + 2),
            (seen.write(), u.read()),
        ),
        |(i, (s, u))| s.set(i, u.get(i)),
    )?;
    ctx.synchronize()?;
    let s = seen.to_vec()?;
    let first = halo.coords()[0] * local;
    let global = size * local;
    assert_eq!(s[0], ((first + global - 1) % global) as f64, "lower ghost");
    assert_eq!(s[local + 1], ((first + local) % global) as f64, "upper ghost");

    // Overlap of a halo exchange: on odd ranks the exchange vertex cannot finish before the
    // even neighbours join, which they do only when told to, so the edges the runtime infers
    // are seen while it is pending. A kernel on ghost-free subviews gets no edge to it (it
    // runs during the exchange); one that reads the ghosts does.
    let chain = Halo::<1>::new(&world, [0], [false], 1)?;
    let (v, v_next): (View<f64, 1>, View<f64, 1>) =
        (View::new("v", [local + 2])?, View::new("v next", [local + 2])?);
    v.fill_host(rank as f64)?;
    if rank % 2 == 1 {
        let ctx2 = context()?;
        let exchange = ctx2.halo_exchange("exchange", &chain, &v)?;
        let v_in: View<f64, 1, hoplite_core::LayoutStride> =
            v.subview([hoplite_core::Slice::Range(1..local + 1)])?;
        let next_in: View<f64, 1, hoplite_core::LayoutStride> =
            v_next.subview([hoplite_core::Slice::Range(1..local + 1)])?;
        ctx2.launch(
            "inner",
            (
                RangePolicy::new(Serial::default(), 1..local - 1),
                (next_in.write(), v_in.read()),
            ),
            |(i, (n, v))| n.set(i, v.get(*i - 1) + v.get(*i + 1)),
        )?;
        ctx2.launch(
            "edge",
            (
                RangePolicy::new(Serial::default(), 1..2),
                (v_next.write(), v.read()),
            ),
            |(i, (n, v))| n.set(i, v.get(*i - 1) + v.get(*i + 1)),
        )?;
        assert!(
            !exchange.is_finished(),
            "the exchange waits for the even neighbours"
        );
        let parents = ctx2.parents();
        assert_eq!(parents.len(), 3, "{parents:?}");
        assert!(
            parents[1].is_empty(),
            "the ghost-free kernel does not wait for the exchange: {parents:?}"
        );
        assert!(
            parents[2].contains(&exchange.vertex().id()),
            "the kernel that reads ghosts waits for it: {parents:?}"
        );
        for neighbour in [rank - 1, rank + 1] {
            if neighbour < world.size() {
                world.send(&go, neighbour, 6)?;
            }
        }
        exchange.wait()?;
        ctx2.synchronize()?;
        // The edge point sums its lower ghost (the lower neighbour's value) and its right
        // neighbour (this rank's own).
        assert_eq!(v_next.host_read()?.get(1), (rank - 1) as f64 + rank as f64);
    } else {
        for neighbour in [rank - 1, rank + 1] {
            if neighbour >= 0 && neighbour < world.size() {
                world.recv(&go, neighbour, 6)?;
            }
        }
        chain.exchange(&v)?;
    }
    world.barrier()?;

    // Failures: a message of the wrong size fails the receive vertex and its descendants; the
    // context stays usable. A view borrowed outside the context is refused at once.
    let ten: View<f64, 1> = View::new("ten", [10])?;
    if rank % 2 == 0 {
        world.send(&ten, partner, 4)?;
    } else {
        let eight: View<f64, 1> = View::new("eight", [8])?;
        let after: View<f64, 1> = View::new("after", [8])?;
        let recv = ctx.recv("short receive", &world, &eight, partner, 4)?;
        let consumer = ctx.launch(
            "consumer",
            (
                RangePolicy::new(Serial::default(), 0..8),
                (after.write(), eight.read()),
            ),
            |(i, (a, e))| a.set(i, e.get(i)),
        )?;
        let err = recv.wait().expect_err("size mismatch");
        assert!(matches!(err, Error::SizeMismatch { expected: 64, .. }), "{err}");
        assert!(consumer.wait().is_err(), "the consumer inherits the failure");
        let fresh: View<f64, 1> = View::new("fresh", [8])?;
        ctx.launch(
            "still usable",
            (RangePolicy::new(Serial::default(), 0..8), (fresh.write(),)),
            |(i, (f,))| f.set(i, 1.0),
        )?
        .wait()?;
        assert_eq!(fresh.to_vec()?, vec![1.0; 8]);
        assert!(ctx.synchronize().is_err(), "the failures are reported once more");
        let guard = ten.host_read()?;
        let err = ctx
            .recv("borrowed", &world, &ten, partner, 5)
            .expect_err("a view borrowed by the host");
        assert!(matches!(err, Error::Dag(_)), "{err}");
        drop(guard);
        let err = ctx
            .send("bad rank", &world, &ten, world.size(), 5)
            .expect_err("rank out of range");
        assert!(matches!(err, Error::RankOutOfRange { .. }), "{err}");
    }
    drop(ctx);
    world.barrier()?;
    println!("{}", support::PASSED);
    Ok(())
}
