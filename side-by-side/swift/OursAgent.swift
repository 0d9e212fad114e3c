// The side-by-side agent written with acp-inject's Swift package (AcpInject; ACP v2 with
// session/inject, and v1 for v1 clients): it streams "you said: <text>" in chunks, reports a tool
// call, asks permission, completes the tool call (or fails it when rejected) and ends the turn;
// a cancel ends it `cancelled`. The library also serves queue, steer, revoke and replace: the
// steers sent meanwhile are read at the tool result, and queued messages open the next turn.
//
//   bindings/swift/swiftw run OursAgent                    (side-by-side/swift/README.md)
import AcpInject
import Foundation

struct EchoAgent: Agent {
    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? {
        let text = messages.map(\.content.text).joined(separator: " ")
        for chunk in ["you ", "said: ", text] {
            try turn.say(chunk)
            guard await turn.sleep(for: .milliseconds(50)) else { return nil }     // cancelled
        }

        let call = "call_\(UUID().uuidString)"
        try turn.toolCall(call, status: .pending, title: "Echo the message", kind: .other)
        guard let answer = try await turn.permission("Echo the message", toolCallId: call) else { return nil }   // nil: cancelled
        try turn.toolCall(call, status: answer == "allow" ? .completed : .failed)
        for steer in try turn.breakPoint(.toolResult) { try turn.say(" (steered: \(steer.content.text))") }
        return nil                                                             // end_turn
    }
}

try await runAgent(EchoAgent(), config: agentConfig(name: "ours-echo-agent"))
