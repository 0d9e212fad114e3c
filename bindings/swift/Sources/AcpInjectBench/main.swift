// Client-mirror throughput through the Swift binding:
//
//     bindings/swift/swiftw run -c release AcpInjectBench [--lines 100000] [--repeat 5]
//
// Applies the recorded 100,000-line stream (the generator of
// bindings/python/bench/bench_mirror.py) to a fresh ClientSession and reports, as the median of
// `--repeat` runs after one warm-up run in the same process:
// - bulk: the whole stream as one String in one `receiveText` crossing (parse + full mirror
//   state in Rust; a String crosses as one copy), and the same as `Data` through `receiveBytes`
//   (lifted byte by byte);
// - per line: one `receive(line:)` crossing per line;
// - Foundation `JSONSerialization` of the same lines (a Swift JSON tree, no state);
// - one no-op crossing (`libraryVersion()`), for the per-call overhead.
import AcpInjectFFI
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

let n = arg("--lines", 100_000)
let repeatCount = arg("--repeat", 5)
let lines = RecordedStream.lines(n)
let blob = RecordedStream.bytes(lines)
let text = RecordedStream.text(lines)
let caps = InjectCapabilities(modes: [.queue, .steer], replace: true, steerInStream: [.finish])

let tBulk = try medianSeconds(repeatCount) {
    let s = try ClientSession(sessionId: "s1", inject: caps)
    let errors = try s.receiveText(lines: text)
    let ignored = try s.ignoredLines()
    precondition(errors.isEmpty && ignored == 0)
}
let tBytes = try medianSeconds(repeatCount) {
    let s = try ClientSession(sessionId: "s1", inject: caps)
    let errors = try s.receiveBytes(bytes: blob)
    let ignored = try s.ignoredLines()
    precondition(errors.isEmpty && ignored == 0)
}
let tLine = try medianSeconds(repeatCount) {
    let s = try ClientSession(sessionId: "s1", inject: caps)
    for line in lines { try s.receive(line: line) }
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
    print("\(pad(what, 44)) \(perSecond) lines/s \(String(format: "%8.1f", mb / t)) MB/s \(String(format: "%7.2f", t / Double(n) * 1e6)) us/line")
}
print("stream: \(n) lines, \(String(format: "%.1f", mb)) MB (\(blob.count / n) B/line); median of \(repeatCount) runs")
row("bulk receiveText (parse + mirror)", tBulk)
row("bulk receiveBytes (parse + mirror)", tBytes)
row("per-line receive (parse + mirror)", tLine)
row("JSONSerialization only (no state)", tJson)
print("\(pad("one no-op crossing (libraryVersion)", 44)) \(String(format: "%12.2f", tNoop * 1e6)) us")
print("per-line crossing overhead: \(String(format: "%.2f", (tLine - tBulk) / Double(n) * 1e6)) us; bulk vs JSONSerialization: \(String(format: "%.2f", tJson / tBulk))x")
