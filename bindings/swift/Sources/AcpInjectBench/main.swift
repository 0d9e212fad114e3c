// A streaming client's cost through the Swift binding: agent lines received one at a time.
//
//     ACP_INJECT_CARGO_PROFILE=release bindings/swift/swiftw run -c release AcpInjectBench [--lines 100000] [--repeat 5]
//
// Applies the recorded 100,000-line stream (`RecordedStream.lines`, from
// bindings/swift/Sources/RecordedStream/RecordedStream.swift) to a fresh `ClientCore` with
// session s1 open and reports, as the median of `--repeat` runs after one warm-up run in the
// same process:
// - per line: one `receive(line:)` crossing per line, each returning that line's events as
//   Swift values (what a client reading its agent line by line pays);
// - per read: the stream in 64 KiB `Data` chunks through `receiveBytes` (what the async
//   client's read loop does in Rust, one crossing per read);
// - bulk: the whole stream as one String in one `receiveText` crossing;
// - Foundation `JSONSerialization` of the same lines (a Swift JSON tree, no state at all);
// - one no-op crossing (`libraryVersion()`), for the per-call overhead.
import AcpInject
import Foundation
import RecordedStream

func arg(_ name: String, _ fallback: Int) -> Int {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
    return v
}

func medianSeconds(_ repeatCount: Int, _ body: () throws -> Void) rethrows -> Double {
    try body() // warm-up
    var times: [Double] = []
    for _ in 0..<repeatCount {
        let t = DispatchTime.now().uptimeNanoseconds
        try body()
        times.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9)
    }
    return times.sorted()[times.count / 2]
}

/// A client connection with session s1 open, as after `session/new`.
func client() throws -> ClientCore {
    let c = ClientCore(maxLineBytes: 1 << 20)
    try c.assumeCapabilities(inject: defaultAgentConfig().inject)
    try c.openSession(sessionId: "s1", mirrorJson: nil)
    return c
}

/// Checks a run: every line applied, the mirror holds every turn.
func check(_ c: ClientCore, events: Int) throws {
    let snap = try c.snapshot(sessionId: "s1")
    let ignored = try c.ignoredLines()
    precondition(ignored == 0 && events == n, "\(events) events for \(n) lines, \(ignored) ignored")
    precondition(snap?.transcript.count == 2 * ((n + RecordedStream.linesPerTurn - 1) / RecordedStream.linesPerTurn))
}

let n = arg("--lines", 100_000)
let repeatCount = arg("--repeat", 5)
let lines = RecordedStream.lines(n)
let blob = RecordedStream.bytes(lines)
let text = RecordedStream.text(lines)
let reads = stride(from: 0, to: blob.count, by: 64 * 1024).map { blob.subdata(in: $0..<min($0 + 64 * 1024, blob.count)) }

let tLine = try medianSeconds(repeatCount) {
    let c = try client()
    var events = 0
    for line in lines { events += try c.receive(line: line).count }
    try check(c, events: events)
}
let tRead = try medianSeconds(repeatCount) {
    let c = try client()
    var events = 0
    for chunk in reads { events += try c.receiveBytes(bytes: chunk).count }
    try check(c, events: events)
}
let tBulk = try medianSeconds(repeatCount) {
    let c = try client()
    try check(c, events: c.receiveText(text: text).count)
}
let datas = lines.map { Data($0.utf8) }
let tJson = try medianSeconds(repeatCount) {
    for d in datas { _ = try JSONSerialization.jsonObject(with: d) }
}
let calls = 200_000
let tNoop = medianSeconds(repeatCount) {
    for _ in 0..<calls { _ = libraryVersion() }
} / Double(calls)

let mb = Double(blob.count) / 1e6
func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s : s + String(repeating: " ", count: width - s.count) }
func row(_ what: String, _ t: Double) {
    let perSecond = String(format: "%12.0f", Double(n) / t)
    print("\(pad(what, 46)) \(perSecond) lines/s \(String(format: "%8.1f", mb / t)) MB/s \(String(format: "%7.2f", t / Double(n) * 1e6)) us/line")
}
print("stream: \(n) lines, \(String(format: "%.1f", mb)) MB (\(blob.count / n) B/line); median of \(repeatCount) runs")
row("per line: receive(line:) (parse + mirror + events)", tLine)
row("per read: receiveBytes, 64 KiB chunks", tRead)
row("bulk: receiveText, one crossing", tBulk)
row("JSONSerialization only (no state)", tJson)
print("\(pad("one no-op crossing (libraryVersion)", 46)) \(String(format: "%12.2f", tNoop * 1e6)) us")
print("per-line overhead over bulk: \(String(format: "%.2f", (tLine - tBulk) / Double(n) * 1e6)) us/line")
