//! The two tidy rules (`acp-inject-tidy`) that need codegen's lists of what it generates; the
//! others are that crate's own tests.

use crate::codegen::{BESIDE_CODE, FFI_VALUES, PREAMBLE, PYTHON_VALUES, RUST_WIRE, RUST_WIRE_V1};

fn check(rule: Result<(), acp_inject_tool_support::Error>) {
    if let Err(e) = rule {
        panic!("{e}");
    }
}

#[test]
fn every_generated_file_has_the_preamble() {
    check(acp_inject_tidy::every_generated_file_has_the_preamble(&BESIDE_CODE, &[PREAMBLE.into(), crate::versions::maven_preamble()]));
}

#[test]
fn no_protocol_literals_outside_tests() {
    check(acp_inject_tidy::no_protocol_literals_outside_tests(&[RUST_WIRE, RUST_WIRE_V1, FFI_VALUES, PYTHON_VALUES]));
}
