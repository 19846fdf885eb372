//! The reducers' own tests, independent of any backend: `fold` joins values by hand (no
//! launch), `launch` runs every reducer through `parallel_reduce` on the serial backend with
//! known data. What must hold on every backend is in the conformance suite
//! (`conformance/src/reducer/`), which the serial backend runs too.

mod fold;
mod launch;
