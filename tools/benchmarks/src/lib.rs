//! acp-inject-benchmarks: the benchmark publisher behind `cargo xtask bench [ROUNDS]`. [`run`]
//! makes every comparison with the tools users would pick instead and writes `BENCHMARKS.md`
//! (machine, versions, commands, figures and ratios; medians of ROUNDS interleaved rounds
//! measured in one process per language); [`durability_only`] reruns its durability and scale
//! part alone. [`crash`] runs the crash campaigns that part reports, which `cargo xtask crash`
//! and the crash stage of `cargo xtask test` run too.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use acp_inject_tool_support::process::{self, run_ok, Echo};
use acp_inject_tool_support::{cargo, root, Error};

pub mod crash;
mod durability;

fn header(n: usize, what: &str) {
    eprintln!("\n== bench [{n}/5] {what} ==");
}

/// The last line of the output that parses as JSON (the benches print one result object).
fn json_result(what: &str, stdout: &str) -> Result<Value, Error> {
    stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(Value::is_object))
        .ok_or_else(|| Error::msg(format!("{what}: no JSON result in its output")))
}

/// `cargo xtask bench ROUNDS`: every part, then BENCHMARKS.md written whole.
pub fn run(rounds: u32) -> Result<(), Error> {
    let started = Instant::now();
    let root = root();

    // First: it fails fastest when something is off (the store bench, the campaigns).
    header(1, "durability and scale: the store, memory per pending inject, the crash campaign, the load test");
    let durability = durability::section()?;

    header(2, "Rust: bench/ in release mode (builds the official crate on first use), results as JSON on stdout");
    let mut cmd = Command::new(cargo());
    cmd.args(["run", "--release", "--manifest-path", "bench/Cargo.toml", "--", &rounds.to_string()]);
    let out = process::run(&mut cmd, Echo::StderrOnly)?.check()?;
    let rust = json_result("the Rust bench", &out.stdout)?;

    header(3, "Python: a streaming client, one line at a time, vs the official SDK (agent-client-protocol 0.12.1 from PyPI)");
    let python = python(rounds)?;

    header(4, "Kotlin: bindings/kotlin/bench.sh (Maven; the official acp-model from Maven Central on first use)");
    let kotlin = kotlin(rounds);
    header(5, "BENCHMARKS.md");
    let mut md = render(rounds, &rust, &python, kotlin.as_ref());
    md.push_str(&durability);
    let path = root.join("BENCHMARKS.md");
    std::fs::write(&path, &md).map_err(|e| Error::write(&path, e))?;
    print!("{md}");
    eprintln!("bench: {:.0} s in all", started.elapsed().as_secs_f64());
    Ok(())
}

/// `cargo xtask bench --durability-only`: reruns the durability and scale part and replaces it
/// (everything from its heading to the end) in BENCHMARKS.md, saying so in its first line.
pub fn durability_only() -> Result<(), Error> {
    let path = root().join("BENCHMARKS.md");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::read(&path, e))?;
    const HEADING: &str = "\n## Durability";
    let at = text.find(HEADING).ok_or_else(|| Error::msg("BENCHMARKS.md has no durability section to replace"))?;
    let section = durability::section()?;
    let section = section.replacen(
        "\n\n`cargo bench",
        "\n\nThis part, to the end of the file, was rewritten by `cargo xtask bench --durability-only` after the sections \
         above were measured: compare its figures with each other, not with theirs.\n\n`cargo bench",
        1,
    );
    let md = format!("{}{}", &text[..at], section);
    std::fs::write(&path, &md).map_err(|e| Error::write(&path, e))?;
    print!("{section}");
    Ok(())
}

/// `cargo xtask bench --python-only [ROUNDS]`: reruns the Python comparison and replaces its
/// section (from its heading to the next) in BENCHMARKS.md, saying so in its first paragraph.
pub fn python_only(rounds: u32) -> Result<(), Error> {
    let path = root().join("BENCHMARKS.md");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::read(&path, e))?;
    const HEADING: &str = "## Python: a streaming client";
    let at = text.find(HEADING).ok_or_else(|| Error::msg("BENCHMARKS.md has no Python section to replace"))?;
    let end = text[at + HEADING.len()..].find("\n## ").map_or(text.len(), |i| at + HEADING.len() + i + 1);
    let python = python(rounds)?;
    let mut section = String::new();
    render_python(&mut section, &python);
    let section = section.replacen(
        "\n\n",
        "\n\nThis section was rewritten by `cargo xtask bench --python-only` after the others were measured: \
         compare its figures with each other, not with theirs.\n\n",
        1,
    );
    let md = format!("{}{}\n{}", &text[..at], section.trim_end(), &text[end..]);
    std::fs::write(&path, &md).map_err(|e| Error::write(&path, e))?;
    print!("{section}");
    Ok(())
}

/// The Kotlin comparison, when the Kotlin package provides one (`bindings/kotlin/bench.sh`
/// printing one JSON object as its last line).
fn kotlin(rounds: u32) -> Option<Result<Value, Error>> {
    let script = root().join("bindings/kotlin/bench.sh");
    if !script.exists() {
        return None;
    }
    let out = process::run(Command::new("bash").arg(&script).arg(rounds.to_string()), Echo::All);
    Some(match out {
        Ok(o) if o.success() => json_result("bench.sh", &o.stdout),
        Ok(o) => Err(Error::msg(o.stdout.lines().last().unwrap_or("failed"))),
        Err(e) => Err(e),
    })
}

/// What profiling found where we were slower, what was fixed, and what remains.
const FINDINGS: &str = "
## Where we were slower, what was fixed, what remains

- **Rust typed decode was no faster than `serde_json::Value`.** `perf` showed a quarter of
  the time in `memmove`: tagged-union values of 300–400 bytes (a `ToolCallUpdate`, a
  `ResourceLink` with annotations) were moved through every decode layer. The generator now
  boxes union variants (two-word unions); typed decode went from about 1.0× to about 1.8× `Value`.
  `session/update` lines are also decoded in one pass (params straight into the typed struct
  when `method` precedes them) instead of framing first and decoding the params again.
- **Bulk calls through the bindings cost more than they should.** UniFFI lifts a byte array
  one byte at a time; `receive_text` / `handle_text` take the lines as one string (one copy):
  Python bulk went from about 0.63M to 0.9M lines/s, Swift's bulk call stopped being slower
  than one call per line.
- **UniFFI's calling convention costs more than the work, per call.** One call costs
  microseconds (Python about 7 µs; Kotlin, through JNA `Structure`s marshalled by reflection,
  10–80 µs and noisy). The per-line paths (`receive_line` in Python, `receiveLine` in Kotlin)
  are one plain call with primitive arguments instead. In Kotlin the generated
  `callWithHandle` also cloned the object's handle through a UniFFI call of its own on every
  line, and the clone was never released (the Rust side only borrows): `receiveLine` now
  calls the library's own C function with a line port, a handle the library hands out once per
  object (`linePort()`), so it reads no private state of the generated class. Other calls keep UniFFI's
  convention; bulk calls (`receive_text`) remain the cheapest way to hand over many lines.
- **Kotlin per line was below the official models (about 0.5×).** Three causes, each
  measured apart. The bench ran the rows through UniFFI's own convention just before
  `receiveLine`: those calls leave JNA `Memory` that JNA's cleaner thread frees for seconds after
  a collection, and on two cores that thread took one from whichever contender came next
  (`receiveLine` measured 2.5× slower right after them than alone); they now run after the
  interleaved rounds. Encoding the line with a `CharsetEncoder` cost about 0.9 µs; the JDK's
  `String.toByteArray` about 0.1 µs (the strict encoder now runs only when a `?` in the bytes
  may stand for a lone surrogate). And in Rust, tolerant members (`x-deserialize-*`, such as a
  tool call's `content`) were parsed into a `serde_json::Value` tree and decoded again; they
  are now held as the JSON text serde_json lends and decoded straight into their type (a tree
  only under serde's buffering deserializers, and for the wording of what was dropped); the
  mirror finds a message without building a key, and the events' serialization buffer is
  reused: the Rust side of a line went from about 1.33 to 1.19 µs.
- **Against `agent-client-protocol-schema` 1.20.0, on a stream with every draft update kind,
  typed decode was 2.0× the official crate and decode + encode 1.74×.** What tolerant members
  (`x-deserialize-*`) cost, measured by generating the types without them: the updates that
  have them (a message's content, a tool call's title/kind/status/rawInput, an idle state's
  usage) decoded in up to twice the time. Each was held as JSON text (plus a heap copy of
  serde_json's token) and decoded again; an array was held whole, split into held items and
  each item decoded again. Now the generator picks how to read each one from its type: scalars,
  free-form `_meta` objects and any-value members are read once, in place (the outcome is the
  same tree-defined one); arrays item by item; only structured members are still held, since
  their decoding can fail half-way. That brought decode to the no-tolerance figure (about
  2.1×). The rest came from copies: the unknown variant's map was inline, so every open union
  was 72 bytes and a decoded update was copied 17 times (144–232 bytes each) on its way up;
  `Unknown` is now one pointer, the fast path decodes into its slot and union bodies go
  straight into their boxes (3 copies left), and lines are written into a per-thread buffer.
- **What the official crate types and we keep open.** The draft kinds our schema does not type
  were read into an order-keeping map (hashing and a tree per member); `Unknown` now keeps
  them as JSON text, each member's value read as its text, and re-encoding is a copy. That
  moved decode + encode to the target (2.02× in the run above) but not typed decode (2.42×):
  on a quiet machine it is within the noise of earlier runs (2.37–2.55×).
- **Objects whose tag comes last** were buffered as trees before they were decoded (a
  tag-last chunk cost about 1.7× a tag-first one). The members met before the tag are now
  held as the text serde_json lends and decoded in place once the tag is known (about 1.2×).
  `acp-inject-bench N kinds` (in `bench/`) prints typed decode per update kind, ours and the
  official crate's, which is how this and the next item were found.
- **Typed decode ≥ 2.5×: at the target, by a small margin.** After the tag-last change, six
  runs on this machine gave 2.40–2.63× (median 2.55×; five of six at or above 2.5×), the run
  above included; decode + re-encode 2.02–2.10×. What holds the ratio down, per kind: the
  chunks (about 40% of the lines, 0.41 µs against the official crate's 1.0 µs) and tool call
  updates (2.25×). A profile of the chunks shows serde_json's string scanning at about 30%
  (the same code on both sides) and the allocator at about 11%: a chunk owns five heap blocks
  (its session id, its update's box, its message id, its content's box and its text). Inline
  (small-string) ids would remove two of them, an API change to every id type left for a
  later version. Boxing `_meta` (an API change across every type and the FFI) made a hot chunk
  6% faster but did not move the bench's ratios, so it was left out.
- **Remains: Kotlin's bare tree parse.** kotlinx `parseToJsonElement`, which builds no state,
  is faster than our mirror through JNA (the String is encoded to UTF-8 and copied across JNA
  before Rust parses it, and every line is applied to the mirror).
- **Remains: cache effects with 100k pending.** Replace at 100,000 pending runs at about 0.6×
  its 1,000-pending rate: the id index and the slab of pending injects outgrow the CPU
  caches. The cost per operation stays O(1).
";

/// The version of the official Rust crate the bench pins (`=X.Y.Z` in bench/Cargo.toml).
fn official_crate_version() -> String {
    let manifest = std::fs::read_to_string(root().join("bench/Cargo.toml")).unwrap_or_default();
    manifest
        .lines()
        .find(|l| l.trim_start().starts_with("agent-client-protocol-schema"))
        .and_then(|l| l.split("version = \"=").nth(1))
        .and_then(|v| v.split('"').next())
        .unwrap_or("?")
        .to_owned()
}

/// ` (kind: count, …)` for the kinds of the lines left out, or nothing.
fn left_out_kinds(kinds: &Value) -> String {
    let Some(kinds) = kinds.as_object().filter(|k| !k.is_empty()) else { return String::new() };
    let list: Vec<String> = kinds.iter().map(|(k, n)| format!("`{k}`: {n}")).collect();
    format!(" ({})", list.join(", "))
}

fn cmd(program: &str, args: &[&str]) -> String {
    Command::new(program).args(args).output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn render(rounds: u32, rust: &Value, py: &Value, kotlin: Option<&Result<Value, Error>>) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| c.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned()))
        .unwrap_or_default();
    let mut s = String::new();
    let _ = writeln!(s, "# Benchmarks\n");
    let _ = writeln!(s, "Written by `cargo xtask bench {rounds}`; rerun it to reproduce. Every figure is the median of {rounds} interleaved rounds in one process per language, and each ratio compares figures from the same run: the machine is shared and noisy, so compare ratios, not absolute numbers.\n");
    let _ = writeln!(s, "- machine: {} cores, {cpu}", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0));
    let _ = writeln!(s, "- {}; Python {}", cmd("rustc", &["--version"]), py["python"].as_str().unwrap_or("?"));
    let _ = writeln!(s, "- contenders: `agent-client-protocol-schema` {} (the Rust crate registry, feature `unstable_protocol_v2`), `agent-client-protocol` {} (PyPI)\n", official_crate_version(), py["official_version"].as_str().unwrap_or("0.12.x"));

    let d = &rust["decode"];
    let r = &d["results"];
    let lps = |k: &str| f(&r[k]["lines_per_s"]);
    let _ = writeln!(s, "## Rust: decoding a `session/update` stream\n");
    let _ = writeln!(s, "{} lines ({} B/line) of the shared recorded-like stream (`crates/wire/benches/stream.rs`: every `sessionUpdate` kind of the vendored upstream draft, chunks the most frequent; the kinds our schema does not type go through our open `other` branch; plus an extension update and tag-last objects), each line decoded whole as a client reads it. {} lines the official crate rejects were left out of every contender{}.\n", d["lines"], d["bytes_per_line"], d["left_out"], left_out_kinds(&d["left_out_kinds"]));
    let _ = writeln!(s, "| what | ours | official crate | ratio | `serde_json::Value` | ours / Value |\n|---|---|---|---|---|---|");
    let _ = writeln!(
        s,
        "| typed decode (lines/s) | {:.0} | {:.0} | **{:.2}×** | {:.0} | {:.2}× |",
        lps("ours_decode"),
        lps("official_decode"),
        lps("ours_decode") / lps("official_decode"),
        lps("value_parse"),
        lps("ours_decode") / lps("value_parse")
    );
    let _ = writeln!(
        s,
        "| decode + re-encode (lines/s) | {:.0} | {:.0} | **{:.2}×** | {:.0} | {:.2}× |\n",
        lps("ours_roundtrip"),
        lps("official_roundtrip"),
        lps("ours_roundtrip") / lps("official_roundtrip"),
        lps("value_roundtrip"),
        lps("ours_roundtrip") / lps("value_roundtrip")
    );
    let decode = lps("ours_decode") / lps("official_decode");
    let roundtrip = lps("ours_roundtrip") / lps("official_roundtrip");
    let verdict = |met: bool| if met { "**met**" } else { "**not met in this run**" };
    let _ = writeln!(
        s,
        "Targets: typed decode ≥ 2.5× the official crate and faster than `Value`: {}; decode + encode ≥ 2×: {}.\n",
        verdict(decode >= 2.5 && lps("ours_decode") > lps("value_parse")),
        verdict(roundtrip >= 2.0)
    );

    render_python(&mut s, py);

    let _ = writeln!(s, "## Kotlin\n");
    match kotlin {
        None => {
            let _ = writeln!(s, "Not measured: `bindings/kotlin/bench.sh` does not exist yet.\n");
        }
        Some(Err(e)) => {
            let _ = writeln!(s, "Not measured: the Kotlin bench failed ({e}).\n");
        }
        Some(Ok(k)) => {
            let _ = writeln!(s, "{}\n", k["summary"].as_str().unwrap_or(""));
            if let Some(rows) = k["rows"].as_array() {
                let _ = writeln!(s, "| what | lines/s |\n|---|---|");
                for row in rows {
                    let _ = writeln!(s, "| {} | {:.0} |", row["what"].as_str().unwrap_or("?"), f(&row["lines_per_s"]));
                }
                let _ = writeln!(s);
            }
        }
    }

    let _ = writeln!(s, "## Core: agent-side operations with many injects pending\n");
    let _ = writeln!(s, "Operations per second through the JSON line endpoint (each includes one line parse and the encoding of its outputs). The pending count stays fixed during a measurement.\n");
    let _ = writeln!(s, "| operation | 1,000 pending | 100,000 pending | 100k / 1k |\n|---|---|---|---|");
    let c = &rust["core"];
    for (op, label) in [
        ("inject", "inject (queue)"),
        ("revoke", "revoke"),
        ("replace", "replace"),
        ("steer_and_deliver", "steer + break-point delivery"),
    ] {
        let (a, b) = (f(&c["1000"][op]), f(&c["100000"][op]));
        let _ = writeln!(s, "| {label} | {a:.0} | {b:.0} | {:.2} |", b / a);
    }
    let _ = writeln!(s, "\nA cost linear in the pending count would make the last column 0.01; it stays near 1 (cache effects only).");
    let _ = writeln!(s, "{FINDINGS}");
    s
}

// ----- Python -----

/// The official Python SDK, pinned: the version the comparison names.
const OFFICIAL_PYTHON_SDK: &str = "agent-client-protocol==0.12.1";

/// `bindings/python/bench/bench_per_line.py` in the cached venv, with the official SDK
/// installed beside the package; its JSON result.
fn python(rounds: u32) -> Result<Value, Error> {
    let py = acp_inject_tool_support::python::python_with_package("")?;
    run_ok(Command::new(&py).args(["-m", "pip", "install", "--progress-bar", "off", OFFICIAL_PYTHON_SDK]))?;
    let mut cmd = Command::new(&py);
    cmd.args(["bindings/python/bench/bench_per_line.py", "--json", "--rounds", &rounds.to_string()]).env("PYTHONUNBUFFERED", "1");
    let out = process::run(&mut cmd, Echo::StderrOnly)?.check()?;
    json_result("the Python bench", &out.stdout)
}

/// What the per-line profile showed, what was changed, and what remains.
const PYTHON_FINDINGS: &str = "
Where the time goes:

- **The crossing.** A UniFFI method call from Python is three ctypes calls (clone the
  object's handle, the call, free the returned buffer), each with a call-status record built in
  Python. `ClientCore.receive_line` makes one plain ctypes call instead
  (`acp_inject_line_port_receive_into`, `crates/ffi/src/lines.rs`, on a line port the
  library hands out once per object): the line goes in as it was read (the library drops the
  line ending), the events come back into a per-thread buffer.
- **Decoding the typed events.** The events come back in the boundary encoding
  (`docs/encoding.md`: MessagePack maps keyed by field name, union values tagged by class),
  and msgspec (C) decodes them straight into the package's own value classes
  (`acp_inject/values.py`, `msgspec.Struct`s generated from the value model): no Python call
  per object, one flat activity per event. Nothing of UniFFI's runtime is read.
- **One call for the whole stream** (`receive_text`) takes the same path for every line of a
  read, with one crossing.
- **What remains.** Per line we do more than parse: the line is routed and applied to the
  session's state (transcript, turn state, pending items) in Rust before its events are
  encoded; the official SDK only validates the message into its models.
";

fn render_python(s: &mut String, py: &Value) {
    let us = |k: &str| f(&py[k]);
    let per_s = |k: &str| 1e6 / f(&py[k]);
    let _ = writeln!(s, "## Python: a streaming client, one line at a time\n");
    let _ = writeln!(
        s,
        "{} lines ({} B/line) of `session/update`, the kinds the official package's (v1) models and v2 share in the same wire shape (agent message, thought and user message chunks, tool call updates), each handed over alone, as the `bytes` a reader of the agent's stdout gets from `readline()`, and both sides accept every line. **Ours** (`bindings/python/bench/bench_per_line.py`): `ClientCore.receive_line(line)` applies the line to the client's state (routing, the session's transcript and turn state) and returns its typed events (the flat `SessionActivity` values: an `AgentMessageChunk`, a `ToolCallUpdate`, …) in one foreign call. **Official**: `agent-client-protocol` {} (PyPI), its client's path for an incoming line, `json.loads` then `SessionNotification.model_validate(params)`: typed pydantic models, no state. Medians of {} interleaved rounds, Python {}.\n",
        py["lines"],
        py["bytes_per_line"],
        py["official_version"].as_str().unwrap_or("?"),
        py["rounds"],
        py["python"].as_str().unwrap_or("?")
    );
    let _ = writeln!(s, "| per line | µs/line | lines/s |\n|---|---|---|");
    for (key, what) in [
        ("ours_line_us", "ours: `ClientCore.receive_line(line)`: state + typed events, one call"),
        ("ours_feed_us", "ours: `ClientCore.feed(line)` (any chunk of bytes): the same path"),
        (
            "ours_receive_us",
            "ours: `ClientCore.receive(line)` (str): the same through UniFFI's calling convention and its generated readers",
        ),
        ("official_us", "official SDK: `json.loads` + `SessionNotification.model_validate`: typed models"),
    ] {
        let _ = writeln!(s, "| {what} | {:.2} | {:.0} |", us(key), per_s(key));
    }
    let ratio = f(&py["ratio"]);
    let _ = writeln!(
        s,
        "\n**ours / official per line: {ratio:.2}×** with `receive_line` ({:.2}× with `feed`, {:.2}× with `receive`). Target ≥ 1×: **{}**.\n",
        f(&py["ratio_feed"]),
        f(&py["ratio_receive"]),
        if ratio >= 1.0 { "met" } else { "not met" }
    );
    let _ = writeln!(s, "Profile of our per-line time, same run:\n");
    let _ = writeln!(s, "| what | µs/line |\n|---|---|");
    // The rest is a difference of medians measured apart: near zero it is within their noise.
    let rest = us("ours_line_us") - us("crossing_us") - us("decode_us");
    let two = |v: f64| format!("{v:.2}");
    let rest = if rest > 0.1 { two(rest) } else { format!("≈ 0 ({rest:.2}: within the noise of the subtraction)") };
    for (what, v) in [
        (
            "an ignored line, `receive_line(b\"\")`: the crossing, plus Rust's parse error and one small event decoded".to_owned(),
            two(us("crossing_us")),
        ),
        ("for comparison: `receive(\"\")`, the same through UniFFI's convention".to_owned(), two(us("feed_crossing_us"))),
        ("decoding the typed events in Python (msgspec, from the boundary encoding Rust returned)".to_owned(), two(us("decode_us"))),
        ("the rest (ours minus the two rows above): the line parsed and applied in Rust, the events encoded".to_owned(), rest),
        (
            "for comparison: the whole stream in one `receive_text` call (no per-line crossing), per line".to_owned(),
            two(us("bulk_us")),
        ),
        ("for comparison: `json.loads` alone".to_owned(), two(us("json_loads_us"))),
    ] {
        let _ = writeln!(s, "| {what} | {v} |");
    }
    let _ = writeln!(s, "{PYTHON_FINDINGS}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pinned_official_crate_version_is_read_from_the_bench_manifest() {
        let v = super::official_crate_version();
        assert!(v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok()), "{v:?}");
    }

    #[test]
    fn left_out_kinds_are_listed_when_there_are_any() {
        assert_eq!(super::left_out_kinds(&serde_json::json!({})), "");
        assert_eq!(super::left_out_kinds(&serde_json::json!({ "a": 2, "b": 1 })), " (`a`: 2, `b`: 1)");
    }
}
