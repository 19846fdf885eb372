//! The serial backend, the reference semantics, runs the whole conformance suite.

hoplite_conformance::suite!(serial, hoplite_serial::Serial::default, hoplite_serial::Serial);
