// The idiomatic Swift layer over the generated binding (AcpInjectFFI.swift, a symlink to
// generated/swift/, written by `cargo xtask codegen`). No protocol logic lives here:
// `AgentCore` and `ClientSession` run the Rust state machine; these helpers keep callers on the
// coarse side of the boundary (a crossing costs microseconds: batch where latency allows).
//
// Every call `throws` an `AcpError` (`.InvalidInput`, `.Protocol`, `.Rejected`, `.Host`,
// `.Internal`); both objects are `Sendable` and may be shared between threads.
import Foundation

extension ContentBlock {
    /// A text content block: `.text("fix the bug")`.
    public static func text(_ value: String) -> ContentBlock { .text(text: value) }
}

extension Sequence where Element == AgentOutput {
    /// The JSON-RPC lines that go to `connection`: its responses and every notification
    /// (a notification has `to == nil` and goes to every attached connection).
    public func lines(for connection: String) -> [String] {
        compactMap {
            guard case let .line(to, line) = $0, to == nil || to == connection else { return nil }
            return line
        }
    }

    /// The runtime actions, in order; only those of `session` when given.
    public func actions(session: String? = nil) -> [RuntimeAction] {
        compactMap {
            guard case let .action(s, action) = $0, session == nil || s == session else { return nil }
            return action
        }
    }
}

extension ClientSession {
    /// Feeds a stream of agent lines to the mirror, `batchSize` lines per crossing; returns the
    /// error answers met (those `receive(line:)` would have thrown), in order.
    public func receiveAll<S: Sequence>(_ lines: S, batchSize: Int = 4096) throws -> [ProtocolError]
    where S.Element == String {
        precondition(batchSize > 0, "batchSize must be positive")
        var errors: [ProtocolError] = []
        var batch: [String] = []
        batch.reserveCapacity(batchSize)
        for line in lines {
            batch.append(line)
            if batch.count == batchSize {
                errors += try receiveLines(lines: batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { errors += try receiveLines(lines: batch) }
        return errors
    }
}

extension ProtocolError {
    /// The error answer as the `AcpError` that `ClientSession.receive(line:)` throws for it.
    public var asError: AcpError { .Protocol(code: code, message: message, reason: reason, messageId: messageId) }
}
