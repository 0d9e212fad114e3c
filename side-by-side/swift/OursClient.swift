// The side-by-side client written with acp-inject's Swift package (AcpInject; negotiates ACP v2
// or v1): it starts the agent over stdio, opens a session, sends a prompt, prints the agent's
// text as it streams, allows the permission request and prints the stop reason. During the turn
// it also queues a follow-up, steers, revokes one queued message and replaces another, and prints
// what became of each. Against a v1 agent the queue is held by the library and sent as prompts
// when the turn ends; a steer needs an agent that offers it.
//
//   bindings/swift/swiftw run OursClient AGENT-COMMAND...   (side-by-side/swift/README.md)
import AcpInject
import Foundation

let agent = try await connect(Array(CommandLine.arguments.dropFirst()), name: "ours-client")
print("[agent] \(agent.agent.info.name), protocol \(agent.agent.protocolVersion)")
let session = try await agent.newSession(cwd: FileManager.default.currentDirectoryPath)
try await session.prompt("hello")

let followUp = try await session.inject("and a follow-up")                  // queued: opens the next turn
if agent.inject?.modes.contains(.steer) == true {
    try await session.inject("keep it short", mode: .steer)                 // read at the next break-point
}
try await session.revoke(session.inject("never mind"))                      // never delivered
let draft = try await session.inject("a draft")
try await session.replace(draft, with: "the final question")               // same place in the queue

var waiting: Set<MessageId> = [followUp, draft]
events: for try await activity in session.events {
    switch activity {
    case let .permissionRequested(p):
        let allow = p.params.options.first { $0.kind == .allowOnce } ?? p.params.options[0]
        print("\n[permission] \(p.params.title): \(allow.name)")
        try session.allow(p.request, optionId: allow.optionId)
    case let .update(.agentMessageChunk(chunk)):
        print(chunk.content.text ?? "", terminator: "")
        fflush(nil)                                                          // every stream: stdout included
    case let .update(.toolCallUpdate(call)):
        print("\n[tool] \(call.title ?? call.toolCallId): \(call.status.map { "\($0)" } ?? "updated")")
    case let .item(item):                                                    // our messages' progress
        print("[\(item.mode) \(item.status)] \(item.content.text)")
        if item.status == .delivered, let id = item.messageId { waiting.remove(id) }
    case let .update(.stateUpdate(.idle(idle))):
        guard let stop = idle.stopReason else { continue }
        print("[stop] \(stop)")
        if waiting.isEmpty { break events }                                  // the queue answered too
    default:
        continue
    }
}
try await agent.close()
