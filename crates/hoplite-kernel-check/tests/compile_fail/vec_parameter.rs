#[hoplite::kernel]
fn scale(i: hoplite::Idx<'_>, y: hoplite::BoundWriter<'_, f64, 1>, weights: Vec<f64>) {
    y.set(i, weights.len() as f64);
}

fn main() {}
