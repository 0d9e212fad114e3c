// A streaming client's cost through the Swift package: agent lines received one at a time.
//
//     ACP_INJECT_CARGO_PROFILE=release bindings/swift/swiftw run -c release AcpInjectBench [--lines 100000] [--repeat 7] [--json]
//
// Applies the recorded 100,000-line stream (`RecordedStream.lines`, from
// bindings/swift/Sources/RecordedStream/RecordedStream.swift) to a fresh `ClientCore` with
// session s1 open and reports, as the median of `--repeat` interleaved rounds (each round runs
// every contender once, in turn, so a noisy neighbour slows all of them alike) after one
// warm-up run of each in the same process:
// - per line: one `receive(line:)` per line, each returning that line's events as Swift values
//   (`[Event]`, decoded from the boundary encoding): what a client reading its agent line by
//   line pays, the library's parsing, mirror and routing included (one plain C call of
//   crates/ffi/src/lines.rs per line, the line's bytes in place, the events decoded from a
//   buffer on the stack);
// - per line through UniFFI: the same through the binding's generated `receive(line:)` (the
//   line copied into a Rust buffer, the events back as `Data`), for comparison;
// - per read: the stream in 64 KiB `Data` chunks through `receive(bytes:)` (what the async
//   client's read loop does in Rust, one crossing per read);
// - bulk: the whole stream as one String in one `receive(text:)` crossing (its 100,000 events
//   in one buffer, decoded at once);
// - the baseline: Foundation's `JSONDecoder` decoding the same lines into `Codable` models (the
//   notification's envelope and this package's `SessionUpdate`, whose `Codable` form is ACP's
//   JSON): a JSON parse into typed values, with no state at all;
// - Foundation's `JSONSerialization` of the same lines (a JSON tree, untyped);
// - one no-op crossing (`libraryVersion()`), for the per-call overhead.
// It ends with the ratio of the baseline to the per-line path (above 1: the per-line path is
// faster than decoding the lines alone with JSONDecoder); with `--json`, then one JSON object
// with the figures (what `cargo xtask bench` reads into BENCHMARKS.md) as the last line.
import AcpInject
import AcpInjectFFI // for the comparison with the binding's own per-line call (names qualified below)
import Foundation
import RecordedStream

func arg(_ name: String, _ fallback: Int) -> Int {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
    return v
}

/// Contenders measured in interleaved rounds: `add` registers one, `run` times them.
final class Rounds {
    private var bodies: [(String, () throws -> Void)] = []
    private var times: [String: [Double]] = [:]

    func add(_ name: String, _ body: @escaping () throws -> Void) { bodies.append((name, body)) }

    /// One warm-up run of each, then `count` rounds of each in turn.
    func run(_ count: Int) throws {
        for (_, body) in bodies { try body() }
        for _ in 0..<count {
            for (name, body) in bodies {
                let t = DispatchTime.now().uptimeNanoseconds
                try body()
                times[name, default: []].append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9)
            }
        }
    }

    /// The median of a contender's rounds, in seconds.
    func median(_ name: String) -> Double {
        let sorted = (times[name] ?? []).sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }
}

let capabilities = AcpInject.defaultAgentConfig().inject

/// A client connection with session s1 open, as after `session/new`.
func client() throws -> AcpInject.ClientCore {
    let c = AcpInject.ClientCore(maxLineBytes: 1 << 20)
    try c.assumeCapabilities(inject: capabilities)
    try c.openSession(sessionId: "s1")
    return c
}

/// Checks a run: every line applied, the mirror holds every turn.
func check(_ c: AcpInject.ClientCore, events: Int) throws {
    try check(c.snapshot(sessionId: "s1"), ignored: c.ignoredLines(), events: events)
}

func check(_ snap: MirrorSnapshot?, ignored: Int, events: Int) {
    precondition(ignored == 0 && events == n, "\(events) events for \(n) lines, \(ignored) ignored")
    precondition(snap?.transcript.count == 2 * ((n + RecordedStream.linesPerTurn - 1) / RecordedStream.linesPerTurn))
}

/// A `session/update` notification, as `Codable` models.
struct Notification: Decodable {
    struct Params: Decodable {
        let sessionId: SessionId
        let update: SessionUpdate
    }

    let jsonrpc: String
    let method: String
    let params: Params
}

let n = arg("--lines", 100_000)
let repeatCount = arg("--repeat", 7)
let json = CommandLine.arguments.contains("--json")
let lines = RecordedStream.lines(n)
let blob = RecordedStream.bytes(lines)
let text = RecordedStream.text(lines)
let reads = stride(from: 0, to: blob.count, by: 64 * 1024).map { blob.subdata(in: $0..<min($0 + 64 * 1024, blob.count)) }
let datas = lines.map { Data($0.utf8) }
let decoder = JSONDecoder()
let calls = 200_000

let rounds = Rounds()
rounds.add("line") {
    let c = try client()
    var events = 0
    for line in lines { events += try c.receive(line: line).count }
    try check(c, events: events)
}
rounds.add("uniffi") {
    let c = AcpInjectFFI.ClientCore(maxLineBytes: 1 << 20)
    try c.assumeCapabilities(inject: Boundary.encode(capabilities))
    try c.openSession(sessionId: "s1", mirrorJson: nil)
    var events = 0
    for line in lines { events += try Boundary.decode([Event].self, from: c.receive(line: line)).count }
    check(try Boundary.decode(MirrorSnapshot?.self, from: c.snapshot(sessionId: "s1")), ignored: Int(try c.ignoredLines()), events: events)
}
rounds.add("read") {
    let c = try client()
    var events = 0
    for chunk in reads { events += try c.receive(bytes: chunk).count }
    try check(c, events: events)
}
rounds.add("bulk") {
    let c = try client()
    try check(c, events: c.receive(text: text).count)
}
rounds.add("decoder") {
    var updates = 0
    for d in datas {
        let notification = try decoder.decode(Notification.self, from: d)
        if case .other = notification.params.update { preconditionFailure("an update the models do not know: \(notification)") }
        updates += 1
    }
    precondition(updates == n)
}
rounds.add("json") {
    for d in datas { _ = try JSONSerialization.jsonObject(with: d) }
}
rounds.add("noop") {
    for _ in 0..<calls { _ = AcpInjectFFI.libraryVersion() }
}
try rounds.run(repeatCount)

let (tLine, tUniffi, tRead, tBulk) = (rounds.median("line"), rounds.median("uniffi"), rounds.median("read"), rounds.median("bulk"))
let (tDecoder, tJson, tNoop) = (rounds.median("decoder"), rounds.median("json"), rounds.median("noop") / Double(calls))

let mb = Double(blob.count) / 1e6
func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s : s + String(repeating: " ", count: width - s.count) }
func row(_ what: String, _ t: Double) {
    let perSecond = String(format: "%12.0f", Double(n) / t)
    print("\(pad(what, 52)) \(perSecond) lines/s \(String(format: "%8.1f", mb / t)) MB/s \(String(format: "%7.2f", t / Double(n) * 1e6)) us/line")
}
print("stream: \(n) lines, \(String(format: "%.1f", mb)) MB (\(blob.count / n) B/line); medians of \(repeatCount) interleaved rounds")
row("per line: receive(line:) -> [Event] (parse + mirror)", tLine)
row("per line through UniFFI's receive(line:)", tUniffi)
row("per read: receive(bytes:), 64 KiB chunks", tRead)
row("bulk: receive(text:), one crossing", tBulk)
row("JSONDecoder into Codable models (no state)", tDecoder)
row("JSONSerialization only (untyped, no state)", tJson)
print("\(pad("one no-op crossing (libraryVersion)", 52)) \(String(format: "%12.2f", tNoop * 1e6)) us")
print("per-line overhead over per read: \(String(format: "%.2f", (tLine - tRead) / Double(n) * 1e6)) us/line")
print("per line vs JSONDecoder: \(String(format: "%.2f", tDecoder / tLine))x (above 1: the per-line path is faster)")
if json {
    let us = { (t: Double) in t / Double(n) * 1e6 }
    let result: [String: Any] = [
        "lines": n,
        "bytes_per_line": blob.count / n,
        "rounds": repeatCount,
        "ours_line_us": us(tLine),
        "ours_uniffi_us": us(tUniffi),
        "ours_read_us": us(tRead),
        "ours_bulk_us": us(tBulk),
        "decoder_us": us(tDecoder),
        "json_serialization_us": us(tJson),
        "noop_crossing_us": tNoop * 1e6,
        "ratio": tDecoder / tLine,
    ]
    let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}
