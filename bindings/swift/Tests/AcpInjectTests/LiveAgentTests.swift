import AcpInject
import Foundation
import XCTest

/// End to end over real stdio: the reference agent (a subprocess) driven through `connect`,
/// reacting to the session's event stream like a user at a UI, and checking where each
/// behaviour happened.
final class LiveAgentTests: XCTestCase {
    static let prompt = "Fix the failing login test"
    static let steer = "Use the auth_v2 module"
    static let changelog = "Then update the changelog"
    static let bump = "Also bump the version"
    static let draft = "Draft: add a test"
    static let regression = "Add a regression test for the login bug"
    static let held = "Skip the slow integration tests"
    static let summary = "Finally, summarize the changes"

    /// A steer on the first chunk, three queued messages on the first tool call (one revoked,
    /// one replaced), a steer while the permission prompt is open, then the answer; in turn 2 a
    /// queued message and a cancel. Three turns: end_turn, cancelled (the queued message
    /// survives and opens turn 3), end_turn.
    func testALiveSessionShowsEveryBehaviour() async throws {
        let agent = try await connectReferenceAgent(delayMs: 40, ["--tools", "3", "--permission-on-tool", "1"])
        let s = try await agent.newSession(cwd: "/tmp")
        let ids = Locked<[String: String]>([:]) // text → message id
        let told = Locked<[String]>([]) // every activity, described, as it comes
        let story: [String]
        do {
            story = try await withDeadline(60) { () -> [String] in
            var story: [String] = [] {
                didSet { told.withLock { $0 = story } }
            }
            var turn = 0, idle = true, answeredAt: Int?, queued = false, summarized = false
            let promptId = try await s.prompt(Self.prompt).messageId
            ids.withLock { $0[Self.prompt] = promptId }
            events: for try await activity in s.events {
                story.append(activity.description)
                switch activity {
                case let .permissionRequested(p):
                    let (request, params) = (p.request, p.params)
                    if turn == 1 {
                        let steer = try await s.inject(Self.held, mode: .steer) // held, not dropped (R-PERM-1)
                        ids.withLock { $0[Self.held] = steer }
                    }
                    let allow = params.options.first { $0.kind == .allowOnce } ?? params.options[0]
                    try s.allow(request, optionId: allow.optionId)
                    if turn == 1 {
                        story.append("allowed")
                        answeredAt = story.count
                    }
                case .update(.stateUpdate(.running)) where idle: // not a permission's end
                    idle = false
                    turn += 1
                case .update(.stateUpdate(.idle)):
                    idle = true
                    if turn == 3 { break events }
                case .update(.agentMessageChunk) where turn == 1 && ids.withLock({ $0[Self.steer] }) == nil:
                    let steer = try await s.inject(Self.steer, mode: .steer)
                    ids.withLock { $0[Self.steer] = steer }
                case .update(.agentMessageChunk) where turn == 2 && !summarized:
                    summarized = true
                    let queued = try await s.inject(Self.summary)
                    ids.withLock { $0[Self.summary] = queued }
                    try s.cancel()
                    story.append("cancelled")
                case let .update(.toolCallUpdate(call)) where turn == 1 && !queued && call.title != nil:
                    queued = true
                    var mine: [String: String] = [:]
                    for text in [Self.changelog, Self.bump, Self.draft] { mine[text] = try await s.inject(text) }
                    try await s.revoke(mine[Self.bump]!)
                    try await s.replace(mine[Self.draft]!, with: Self.regression)
                    mine[Self.regression] = mine.removeValue(forKey: Self.draft)
                    ids.withLock { $0.merge(mine) { $1 } }
                default:
                    break
                }
            }
            XCTAssertNotNil(answeredAt)
            return story
            }
        } catch {
            return XCTFail("\(error); the session so far:\n" + told.withLock { $0 }.joined(separator: "\n"))
        }
        let why = "\n" + story.joined(separator: "\n")
        let id = ids.withLock { $0 }
        let snap = try s.snapshot()
        XCTAssertEqual(snap.violations, [], why)
        XCTAssertEqual(snap.state, .idle, why)
        XCTAssertEqual(snap.pending.filter { $0.status == .pending }, [], "nothing left pending\(why)")
        // Every user message in order, under the id its call returned; the revoked one never.
        let expected = [Self.prompt, Self.steer, Self.held, Self.changelog, Self.regression, Self.summary]
        XCTAssertEqual(users(snap), expected, why)
        XCTAssertEqual(snap.transcript.filter { $0.role == .user }.map(\.messageId), expected.map { id[$0] }, why)
        XCTAssertEqual(try s.snapshot().pending.first { $0.messageId == id[Self.bump] }?.status ?? .revoked, .revoked, why)

        /// Where the message with `text` was delivered: the activity just before its user message.
        func deliveredAfter(_ text: String) -> (index: Int, after: String)? {
            guard let mid = id[text], let i = story.firstIndex(where: { $0.hasPrefix("userMessage \(mid) ") }), i > 0 else { return nil }
            return (i, story[..<i].last { !$0.hasPrefix("userMessage") && !$0.hasPrefix("item") && !$0.hasPrefix("pending") } ?? "")
        }
        // Steers arrive at a tool result (a completed tool call), not mid-stream.
        let steer = try XCTUnwrap(deliveredAfter(Self.steer), why)
        XCTAssertTrue(steer.after.hasPrefix("toolCallUpdate") && steer.after.hasSuffix("completed"), "steer after \(steer.after)\(why)")
        // The held steer: after the permission answer AND the next tool result, not at the answer.
        let held = try XCTUnwrap(deliveredAfter(Self.held), why)
        let allowed = try XCTUnwrap(story.firstIndex(of: "allowed"), why)
        XCTAssertGreaterThan(held.index, allowed, why)
        XCTAssertTrue(held.after.hasPrefix("toolCallUpdate") && held.after.hasSuffix("completed"), "held steer after \(held.after)\(why)")
        // Queued messages and the one that survived the cancel open the next turns.
        XCTAssertEqual(try XCTUnwrap(deliveredAfter(Self.changelog), why).after, "state idle (endTurn)", why)
        XCTAssertEqual(try XCTUnwrap(deliveredAfter(Self.summary), why).after, "state idle (cancelled)", why)
        XCTAssertEqual(story.filter { $0.hasPrefix("state idle") }, ["state idle (endTurn)", "state idle (cancelled)", "state idle (endTurn)"], why)
        try await agent.close()
    }
}
