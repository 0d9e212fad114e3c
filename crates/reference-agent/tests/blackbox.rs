//! The black-box stdio suite (`acp-inject-conformance`'s, the same every example agent passes)
//! against this agent, with its SQLite store.

#[test]
fn the_reference_agent_passes_the_black_box_suite() {
    let dir = std::env::temp_dir().join(format!("acp-inject-reference-blackbox-{}", std::process::id()));
    let suite = acp_inject_conformance::blackbox::Suite::new(vec![env!("CARGO_BIN_EXE_acp-inject-agent").to_owned()], &dir).unwrap();
    let results = suite.run();
    std::fs::remove_dir_all(&dir).ok();
    let failures: Vec<String> = results.iter().filter_map(|r| r.failure.as_ref().map(|f| format!("{}: {f}", r.name))).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(results.len(), 6);
}
