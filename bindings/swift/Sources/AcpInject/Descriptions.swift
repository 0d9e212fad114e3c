// Readable descriptions for the values whose default one is a dump of nested structs (enums
// already print their case, open enums their Swift name). `AcpError`'s
// `localizedDescription` is its description.
import Foundation

extension AcpError: CustomStringConvertible, LocalizedError {
    /// The message the library gives the error (`refused locally: mode_not_supported`): the
    /// formats of crates/ffi/src/error.rs (a case the model gains needs one here).
    public var description: String {
        switch self {
        case let .invalidInput(detail): return "invalid input: \(detail)"
        case let .protocol(error): return "the agent refused: \(error)"
        case let .rejected(_, detail): return "refused locally: \(detail)"
        case let .host(_, detail): return detail
        case let .config(detail): return "invalid configuration: \(detail)"
        case let .store(detail): return "store error: \(detail)"
        case let .disconnected(detail): return detail
        case let .mismatch(detail): return detail
        case let .internal(detail): return "internal error (a bug): \(detail)"
        case let .authRequired(error):
            return "the agent requires authentication first (authenticate with one of its authMethods): \(error)"
        }
    }

    public var errorDescription: String? { description }
}

extension ProtocolError: CustomStringConvertible {
    /// `Inject precondition failed (-32010) reason=noRunningTurn`.
    public var description: String {
        var text = "\(message) (\(code))"
        if let reason { text += " reason=\(reason)" }
        if let messageId { text += " messageId=\(messageId)" }
        if let detail { text += ": \(detail)" }
        return text
    }
}

extension ContentBlock: CustomStringConvertible {
    /// A text block as its quoted text, another block as its kind.
    public var description: String {
        switch self {
        case let .text(content): return String(reflecting: content.text)
        case let .image(content): return "[image \(content.mimeType)]"
        case let .audio(content): return "[audio \(content.mimeType)]"
        case let .resourceLink(link): return "[link \(link.uri)]"
        case .resource: return "[resource]"
        case let .other(tag, _): return "[unknown content \(tag)]"
        }
    }
}

extension PendingItem: CustomStringConvertible {
    /// `queue m_3 pending "then lint"`; `queue local_2 pending (held here) "then lint"` for a
    /// message this client holds for an agent that takes no injects.
    public var description: String {
        let held = held ? " (held here)" : ""
        return "\(mode) \(messageId ?? "(no id yet)") \(status)\(held) \(content.map(\.description).joined(separator: " "))"
    }
}

extension TranscriptEntry: CustomStringConvertible {
    /// `user m_1: "fix the bug"`.
    public var description: String {
        "\(role) \(messageId): \(content.map(\.description).joined(separator: " "))"
    }
}

extension PendingInject: CustomStringConvertible {
    public var description: String {
        "\(mode) \(messageId) \(content.map(\.description).joined(separator: " "))"
    }
}

extension Patch: CustomStringConvertible where Value == [ContentBlock] {
    public var description: String {
        switch self {
        case .absent: return "(unchanged)"
        case .null: return "(cleared)"
        case let .value(blocks): return blocks.map(\.description).joined(separator: " ")
        }
    }
}

extension StateUpdate: CustomStringConvertible {
    /// `state idle (endTurn)`.
    public var description: String {
        switch self {
        case .running: return "state running"
        case .requiresAction: return "state requiresAction"
        case let .idle(idle): return "state idle" + (idle.stopReason.map { " (\($0))" } ?? "")
        case .unknown: return "state unknown"
        case let .other(tag, _): return "state \(tag) (unrecognised)"
        }
    }
}

extension SessionUpdate: CustomStringConvertible {
    /// The kind of update and what it is about, on one line.
    public var description: String {
        switch self {
        case let .userMessage(m): return "userMessage \(m.messageId) \(m.content)"
        case let .userMessageChunk(m): return "userMessageChunk \(m.messageId) \(m.content)"
        case let .agentMessage(m): return "agentMessage \(m.messageId) \(m.content)"
        case let .agentMessageChunk(m): return "agentMessageChunk \(m.messageId) \(m.content)"
        case let .agentMessageClear(m): return "agentMessageClear \(m.messageId ?? "(current)")"
        case let .agentThought(m): return "agentThought \(m.messageId) \(m.content)"
        case let .agentThoughtChunk(m): return "agentThoughtChunk \(m.messageId) \(m.content)"
        case let .stateUpdate(s): return s.description
        case let .toolCallUpdate(t):
            return "toolCallUpdate \(t.toolCallId)" + (t.title.map { " \(String(reflecting: $0))" } ?? "") + (t.status.map { " \($0)" } ?? "")
        case let .toolCallContentChunk(t): return "toolCallContentChunk \(t.toolCallId)"
        case .planUpdate: return "planUpdate"
        case let .usageUpdate(u): return "usageUpdate \(u.used)/\(u.size)"
        case .sessionInfoUpdate: return "sessionInfoUpdate"
        case .replayComplete: return "replayComplete"
        case let .acpInjectPending(p): return "pending [\(p.pending.map(\.description).joined(separator: ", "))]"
        case .acpInjectSessionClosed: return "sessionClosed"
        case let .other(tag, _): return "\(tag) (unknown update)"
        }
    }
}

extension SessionActivity: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .update(update): return update.description
        case let .item(item): return "item \(item)"
        case let .violation(v): return "violation \(v.rule) \(v.messageId)"
        case .closed: return "closed"
        case let .tolerated(what): return "tolerated \(what)"
        case let .permissionRequested(p):
            return "permission requested (\(p.request)): \(String(reflecting: p.params.title)), options \(p.params.options.map(\.optionId))"
        }
    }
}
