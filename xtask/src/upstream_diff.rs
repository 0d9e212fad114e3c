//! `cargo xtask upstream-diff PATH`: placeholder.

pub fn run(_args: &[String]) -> Result<(), String> {
    Err("not yet".into())
}
