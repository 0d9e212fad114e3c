import AcpInjectFFI
import Foundation

/// The workspace root: this file is bindings/swift/Tests/AcpInjectFFITests/Support.swift.
let workspace = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let projectVectors = workspace.appendingPathComponent("spec/vectors")

/// Both modes, replace, `finish`: what `defaultAgentOptions()` advertises.
let fullCaps = InjectCapabilities(modes: [.queue, .steer], replace: true, steerInStream: [.finish])

func request(_ id: Int64, _ method: String, _ params: JSON) -> String {
    JSON.object(["jsonrpc": .string("2.0"), "id": .int(id), "method": .string(method), "params": params]).description
}

func textContent(_ text: String) -> JSON { .array([.object(["type": .string("text"), "text": .string(text)])]) }

func injectParams(_ mode: String, _ text: String) -> JSON {
    .object(["sessionId": .string("s1"), "mode": .string(mode), "content": textContent(text)])
}

func revokeParams(_ messageId: String) -> JSON {
    .object(["sessionId": .string("s1"), "messageId": .string(messageId)])
}

func promptParams(_ text: String) -> JSON {
    .object(["sessionId": .string("s1"), "prompt": textContent(text)])
}

func newAgent() throws -> AgentCore {
    let core = try AgentCore(options: defaultAgentOptions())
    try core.createSession(sessionId: "s1")
    return core
}

/// The text of a content block, or nil.
func textOf(_ block: ContentBlock?) -> String? {
    if case let .text(text)? = block { return text }
    return nil
}
