// A complete ACP v2 agent with session/inject, in Swift: a scripted "model" that streams its
// answer, runs two tool calls (asking permission before the second) and reads the steers the
// user sends mid-turn at each tool result. Queue, steer, revoke, replace, cancel, status, list,
// resume and close are the library's. The same agent as bindings/python/examples/agent.py and
// bindings/kotlin/examples/Agent.kt.
//
//   bindings/swift/swiftw run ExampleAgent [--store sessions.db] [--delay-ms 50] [--listen 127.0.0.1:PORT]
import AcpInject
import Foundation

struct ScriptedAgent: Agent {
    let delay: Duration

    func run(turn: AgentTurn, messages: [UserInput]) async throws -> TurnEnd? {
        var heard = messages.map(\.content.text)
        try turn.say("Working on: \(heard.joined(separator: "; ")). ")
        for step in 1...2 {
            guard await turn.sleep(for: delay) else { return nil }     // cancelled: the library reports it
            try turn.say("step \(step) of my plan. ")
        }
        for tool in 1...2 {
            let call = "call_\(turn.sessionId)_\(heard.count)_\(tool)"
            try turn.toolCall(call, status: .pending, title: "Run step \(tool)", kind: .execute)
            if tool == 2, try await turn.permission("Allow step \(tool)?", toolCallId: call) != "allow" {
                try turn.toolCall(call, status: .failed)
                continue
            }
            try turn.toolCall(call, status: .inProgress)
            guard await turn.sleep(for: delay) else { return nil }
            try turn.toolCall(call, status: .completed, output: "step \(tool) done")
            for steer in try turn.breakPoint(.toolResult) {
                heard.append(steer.content.text)                         // the model reads the user's steer here
                try turn.say("(noted: \(steer.content.text)) ")
            }
        }
        try turn.say("Done (\(heard.count) message(s) handled this turn).")
        let n = heard.count
        return TurnEnd(stopReason: .endTurn, usage: Usage(totalTokens: 100 * n + 50, inputTokens: 100 * n, outputTokens: 50))
    }
}

let args = CommandLine.arguments
func option(_ name: String) -> String? {
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    return args[i + 1]
}

let delayMs = option("--delay-ms").flatMap(Int.init) ?? 50
do {
    try await runAgent(
        ScriptedAgent(delay: .milliseconds(delayMs)), config: agentConfig(name: "acp-inject-swift-example"),
        store: option("--store"), listen: option("--listen")
    )
} catch {
    FileHandle.standardError.write(Data("example agent: \(error)\n".utf8))
    exit(1)
}
