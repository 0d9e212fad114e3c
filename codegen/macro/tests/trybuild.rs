//! Compile tests of `wire_types!`: a small schema expands into working types, and every
//! generator error becomes a `compile_error!` that names the problem (`ui/fail/*.stderr`).
//!
//! trybuild builds the cases in `<target>/tests/trybuild/acp-inject-codegen-macro/`, which is
//! the `CARGO_MANIFEST_DIR` the macro resolves schema paths from. The test copies `ui/schemas/`
//! there first, so the cases name `schemas/…` whatever the target directory is. Regenerate the
//! `.stderr` files with `TRYBUILD=overwrite cargo test -p acp-inject-codegen-macro`.

/// The target directory trybuild uses (cargo's: `CARGO_TARGET_DIR`, else the one holding this
/// test binary, `<target>/<profile>/deps/…`).
fn target_dir() -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = std::path::PathBuf::from(dir);
        return if dir.is_absolute() { dir } else { std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir) };
    }
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors().nth(3).expect("<target>/<profile>/deps/<exe>").to_path_buf()
}

fn copy_schemas() {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/schemas");
    let to = target_dir().join("tests/trybuild/acp-inject-codegen-macro/schemas");
    std::fs::create_dir_all(&to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(&from).expect("ui/schemas") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, to.join(path.file_name().expect("file name"))).expect("copy schema");
    }
}

#[test]
fn ui() {
    copy_schemas();
    // trybuild's project is a workspace of its own, so this workspace's profiles (no debug
    // info for dependencies) do not reach it: with full debug info its build took about 1.5 GB.
    // It runs cargo with this process's environment. Set while no other test reads the
    // environment (the other test here only reads files).
    if std::env::var_os("CARGO_PROFILE_DEV_DEBUG").is_none() {
        std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    }
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}

fn cases(dir: &str) -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui").join(dir);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect()
}

/// The cases exist and each fail case has its expected output, so `ui` cannot pass vacuously.
#[test]
fn every_fail_case_has_a_stderr_file() {
    assert!(!cases("pass").is_empty(), "no pass case");
    let fail = cases("fail");
    assert!(fail.len() >= 4, "only {} fail cases", fail.len());
    for case in fail {
        let stderr = case.with_extension("stderr");
        let text = std::fs::read_to_string(&stderr).unwrap_or_else(|_| panic!("{} has no .stderr file", case.display()));
        assert!(text.starts_with("error: "), "{}: not a compile error", stderr.display());
    }
}
