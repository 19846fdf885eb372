//! The distributed heat equation example on 2 and 4 ranks, with and without the DAG runtime,
//! gives the single-process field bit for bit (the example compares and says so).

mod support;

fn run(ranks: usize, args: &[&str]) {
    let example = support::example("heat");
    if !example.is_file() {
        println!(
            "skipped: the heat example is not built at {} (cargo test builds it)",
            example.display()
        );
        return;
    }
    let Some(output) = support::run_mpi(&example, args, ranks) else {
        return;
    };
    assert!(
        output.contains("heat: bitwise identical to the single-process run"),
        "{ranks} ranks {args:?}:\n{output}"
    );
}

#[test]
fn heat_on_2_ranks() {
    run(2, &["20", "48"]);
}

#[test]
fn heat_on_4_ranks() {
    run(4, &["20", "48"]);
}

#[test]
fn heat_on_2_ranks_with_the_dag() {
    run(2, &["--dag", "20", "48"]);
}

#[test]
fn heat_on_4_ranks_with_the_dag() {
    run(4, &["--dag", "20", "48"]);
}
