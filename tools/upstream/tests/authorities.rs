//! Both upstream authorities, for real: npm fetches a release of the TypeScript SDK's package,
//! and the generator builds the Rust schema crate. They need the network (and, for the crate,
//! a couple of minutes of building the first time), so they run only when
//! `ACP_INJECT_UPSTREAM_NETWORK=1`; otherwise each says it was skipped and passes. They use the
//! cache the bump uses (`ACP_INJECT_CACHE`, else `~/.cache/acp-inject`).

use std::collections::BTreeMap;

use acp_inject_upstream::vendored::{sha256, FILES};
use acp_inject_upstream::{npm, schema_crate};

/// The files of `@agentclientprotocol/sdk` 2.4.0 (`package/schema/<file>`), as its tarball
/// carries them; the tarball's integrity is [`NPM_2_4_0_INTEGRITY`].
const NPM_2_4_0: [(&str, &str); 4] = [
    ("v1/schema.json", "sha256:0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a"),
    ("v1/schema.unstable.json", "sha256:ce7881d10c854bcac4f0e7d3a9ce4fb0f612ec0a09e64b572940beec4668c189"),
    ("v2/schema.json", "sha256:b6c91055df549d6f1db1d76d692d0561dad433e03d8ed114ea9b5baed9da72c5"),
    ("v2/schema.unstable.json", "sha256:49e10f8c1935854363ed5b176cc6560d856642ba5020c97d264d34de4b6f1b31"),
];

const NPM_2_4_0_INTEGRITY: &str = "sha512-7qJ8nnyj7WesC5ve185ioTpB2/svQoeGV4HA4nLEhgDUrcmBe54/08VcXc/oL4p14tDbxxECZzdYmUYQ+4l+Wg==";

fn allowed(test: &str) -> bool {
    let on = std::env::var("ACP_INJECT_UPSTREAM_NETWORK").is_ok_and(|v| v == "1");
    if !on {
        eprintln!("{test}: skipped (needs the network; set ACP_INJECT_UPSTREAM_NETWORK=1 to run it)");
    }
    on
}

fn checksums(files: &BTreeMap<String, Vec<u8>>) -> Vec<(String, String)> {
    files.iter().map(|(f, bytes)| (f.clone(), sha256(bytes))).collect()
}

fn expected() -> Vec<(String, String)> {
    NPM_2_4_0.iter().map(|(f, h)| (f.to_string(), h.to_string())).collect()
}

#[test]
fn npm_fetches_the_package_release_byte_for_byte() {
    if !allowed("npm_fetches_the_package_release_byte_for_byte") {
        return;
    }
    let packed = npm::fetch(&acp_inject_tool_support::cache_dir(), "2.4.0").unwrap();
    assert_eq!(packed.integrity, NPM_2_4_0_INTEGRITY);
    assert_eq!(checksums(&packed.files), expected());
}

/// The npm package 2.4.0 was cut from crate 1.15.1 (published 37 minutes before it): the
/// generator reproduces its four files byte for byte, so it generates what upstream publishes.
#[test]
fn the_generator_reproduces_what_upstream_published() {
    if !allowed("the_generator_reproduces_what_upstream_published") {
        return;
    }
    let generated = schema_crate::generate(&acp_inject_tool_support::cache_dir(), "1.15.1").unwrap();
    assert_eq!(checksums(&generated.files), expected());
    assert_eq!(generated.files.len(), FILES.len());
    assert_eq!(generated.checksum, "1b2316d2cd561917bc2c16e3c64771c77e24363b56d40b58fdad091d02059992");
    assert_eq!(generated.roots["v2/schema.unstable.json"], ["Agent", "Client", "ProtocolLevel", "Proxy"]);
    assert_eq!(generated.generation.features["v2/schema.unstable.json"], ["unstable_protocol_v2", "unstable"]);
    assert!(generated.generation.upstream_lock, "the crate's own Cargo.lock pins the generator's dependencies");
}
