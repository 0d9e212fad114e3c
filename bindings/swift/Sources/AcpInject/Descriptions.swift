// Readable descriptions for the generated types whose default one is a dump of nested
// records (payload-less enums such as `ItemStatus` or `ErrorReason` already print their case).
// `AcpError`'s `localizedDescription` uses its description too.
import AcpInjectFFI

extension AcpError: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .InvalidInput(detail): return "invalid input: \(detail)"
        case let .Protocol(error): return "the agent refused: \(error)"
        case let .Rejected(reason): return "refused locally: \(reason)"
        case let .Host(error): return "the agent core refused the runtime event: \(error)"
        case let .Config(detail): return "invalid configuration: \(detail)"
        case let .Store(detail): return "store error: \(detail)"
        case let .Disconnected(detail): return "disconnected: \(detail)"
        case let .Mismatch(detail): return detail
        case let .Internal(detail): return "internal error (a bug): \(detail)"
        }
    }
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
        case .other: return "[unknown content]"
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
        case let .stateUpdate(s):
            switch s {
            case .running: return "state running"
            case .requiresAction: return "state requiresAction"
            case let .idle(idle): return "state idle" + (idle.stopReason.map { " (\($0))" } ?? "")
            case .unknown: return "state unknown"
            case .other: return "state (unrecognised)"
            }
        case let .toolCallUpdate(t):
            return "toolCallUpdate \(t.toolCallId)" + (t.title.map { " \(String(reflecting: $0))" } ?? "") + (t.status.map { " \($0)" } ?? "")
        case let .toolCallContentChunk(t): return "toolCallContentChunk \(t.toolCallId)"
        case .planUpdate: return "planUpdate"
        case let .usageUpdate(u): return "usageUpdate \(u.used)/\(u.size)"
        case .sessionInfoUpdate: return "sessionInfoUpdate"
        case let .acpInjectPending(p): return "pending [\(p.pending.map(\.description).joined(separator: ", "))]"
        case .acpInjectSessionClosed: return "sessionClosed"
        case .other: return "(unknown update)"
        }
    }
}

extension ContentBlockListPatch: CustomStringConvertible {
    public var description: String {
        switch self {
        case .absent: return "(unchanged)"
        case .null: return "(cleared)"
        case let .value(blocks): return blocks.map(\.description).joined(separator: " ")
        }
    }
}

extension SessionActivity: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .event(.update(update)): return update.description
        case let .event(.item(item)): return "item \(item)"
        case let .event(.violation(v)): return "violation \(v.rule) \(v.messageId)"
        case .event(.closed): return "closed"
        case let .event(.tolerated(what)): return "tolerated \(what)"
        case let .permissionRequested(request, params):
            return "permission requested (\(request)): \(String(reflecting: params.title)), options \(params.options.map(\.optionId))"
        }
    }
}

extension RequestId: CustomStringConvertible {
    public var description: String {
        switch self {
        case .null: return "null"
        case let .number(n): return String(n)
        case let .str(s): return String(reflecting: s)
        }
    }
}
