// The recorded mixed stream of agent lines the Swift benchmark (`AcpInjectBench`) and
// `ClientMirrorTests` use: per turn a user message, `running`, 40 agent message chunks with a
// tool call (two updates) every 10 chunks, and `idle` with usage. It was ported from a Python
// mirror benchmark that has since been removed; this file is now its only definition (the
// Python and Kotlin per-line benchmarks use another stream, `shared_stream` of
// bindings/python/bench/bench_per_line.py).
import Foundation

public enum RecordedStream {
    public static let linesPerTurn = 51

    public static func lines(_ n: Int) -> [String] {
        var lines: [String] = []
        lines.reserveCapacity(n + linesPerTurn)
        func update(_ u: String) {
            lines.append(#"{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": \#(u)}}"#)
        }
        var turn = 0
        var i = 0
        while lines.count < n {
            turn += 1
            update(#"{"sessionUpdate": "user_message", "messageId": "u\#(turn)", "content": [{"type": "text", "text": "request number \#(turn): please fix the failing test"}]}"#)
            update(#"{"sessionUpdate": "state_update", "state": "running"}"#)
            for k in 0..<40 {
                i += 1
                update(#"{"sessionUpdate": "agent_message_chunk", "messageId": "a\#(turn)", "content": {"type": "text", "text": "token \#(i) of the answer "}}"#)
                if k % 10 == 9 {
                    let tc = "call_\(turn)_\(k)"
                    update(#"{"sessionUpdate": "tool_call_update", "toolCallId": "\#(tc)", "title": "Run tests", "kind": "execute", "status": "in_progress"}"#)
                    update(#"{"sessionUpdate": "tool_call_update", "toolCallId": "\#(tc)", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "all 42 tests passed"}}]}"#)
                }
            }
            update(#"{"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn", "usage": {"totalTokens": 1200, "inputTokens": 1000, "outputTokens": 200}}"#)
        }
        return Array(lines.prefix(n))
    }

    /// The lines as one newline-terminated string.
    public static func text(_ lines: [String]) -> String {
        lines.joined(separator: "\n") + "\n"
    }

    /// The lines as one newline-terminated buffer.
    public static func bytes(_ lines: [String]) -> Data {
        Data(text(lines).utf8)
    }
}
