//! Every tidy rule that needs nothing from codegen, one test each (the other two run in xtask's
//! tests, which have codegen's lists).

fn check(rule: Result<(), acp_inject_tool_support::Error>) {
    if let Err(e) = rule {
        panic!("{e}");
    }
}

#[test]
fn no_paths_outside_the_repository() {
    check(acp_inject_tidy::no_paths_outside_the_repository());
}

#[test]
fn documents_named_exist() {
    check(acp_inject_tidy::documents_named_exist());
}

#[test]
fn the_vector_format_describes_what_vectors_use() {
    check(acp_inject_tidy::the_vector_format_describes_what_vectors_use());
}

#[test]
fn no_ignored_tests() {
    check(acp_inject_tidy::no_ignored_tests());
}

#[test]
fn clippy_all_only_on_generated_code() {
    check(acp_inject_tidy::clippy_all_only_on_generated_code());
}

#[test]
fn the_shipped_bindings_carry_no_conformance_harness() {
    check(acp_inject_tidy::the_shipped_bindings_carry_no_conformance_harness());
}

#[test]
fn the_bindings_use_uniffis_public_surface_only() {
    check(acp_inject_tidy::the_bindings_use_uniffis_public_surface_only());
}
