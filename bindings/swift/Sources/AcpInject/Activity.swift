// Shortcuts into a session's activity and its updates, for the checks a client makes on every
// activity (`if let idle = activity.turnEnded { … }` instead of
// `if case let .update(.stateUpdate(.idle(idle))) = activity { … }`).
import Foundation

extension SessionActivity {
    /// The session update this activity is, if it is one.
    public var update: SessionUpdate? {
        if case let .update(u) = self { return u }
        return nil
    }

    /// One of this client's own messages (a prompt or an inject) changing status, if this
    /// activity is that.
    public var item: PendingItem? {
        if case let .item(i) = self { return i }
        return nil
    }

    /// The protocol violation this activity reports, if it is one.
    public var violation: Violation? {
        if case let .violation(v) = self { return v }
        return nil
    }

    /// The agent's permission request, if this activity is one (answer it with
    /// ``Session/allow(_:optionId:)``).
    public var permissionRequested: PermissionRequested? {
        if case let .permissionRequested(p) = self { return p }
        return nil
    }

    /// The end of a turn (its `idle` state update, with the stop reason and usage), if this
    /// activity is one.
    public var turnEnded: IdleStateUpdate? { update?.turnEnded }
}

extension SessionUpdate {
    /// The state update, if this is one (`running`, `idle`, `requiresAction`, …).
    public var state: StateUpdate? {
        if case let .stateUpdate(s) = self { return s }
        return nil
    }

    /// The end of a turn: the `idle` state update, if this is one.
    public var turnEnded: IdleStateUpdate? {
        if case let .idle(idle)? = state { return idle }
        return nil
    }

    /// The text a streamed piece of the agent's answer carries (an `agent_message_chunk`'s text
    /// block), if this is one.
    public var agentText: String? {
        if case let .agentMessageChunk(chunk) = self { return chunk.content.text }
        return nil
    }

    /// The message a message update is about (user, agent or thought; chunk, upsert or clear).
    public var messageId: MessageId? {
        switch self {
        case let .userMessage(m): return m.messageId
        case let .userMessageChunk(m): return m.messageId
        case let .agentMessage(m): return m.messageId
        case let .agentMessageChunk(m): return m.messageId
        case let .agentMessageClear(m): return m.messageId
        case let .agentThought(m): return m.messageId
        case let .agentThoughtChunk(m): return m.messageId
        default: return nil
        }
    }
}

extension SessionStatusResponse {
    /// Whether the agent holds the session in memory (`open`), as opposed to `saved`.
    public var isOpen: Bool { status == .open }
}
