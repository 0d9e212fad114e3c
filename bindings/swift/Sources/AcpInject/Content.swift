// Building and reading content blocks.
import Foundation

/// What the calls that take content accept: a `String` (one text block), a ``ContentBlock``
/// or an array of them.
public protocol ContentConvertible: Sendable {
    /// The content as blocks.
    var contentBlocks: [ContentBlock] { get }
}

extension String: ContentConvertible {
    public var contentBlocks: [ContentBlock] { [.text(self)] }
}

extension ContentBlock: ContentConvertible {
    public var contentBlocks: [ContentBlock] { [self] }
}

extension Array: ContentConvertible where Element == ContentBlock {
    public var contentBlocks: [ContentBlock] { self }
}

extension ContentBlock {
    /// A text content block: `.text("fix the bug")`.
    public static func text(_ value: String) -> ContentBlock {
        .text(TextContent(text: value))
    }

    /// The text of a text block, else `nil`.
    public var text: String? {
        if case let .text(content) = self { return content.text }
        return nil
    }
}

extension Sequence where Element == ContentBlock {
    /// The text of the text blocks, joined (other blocks are skipped).
    public var text: String { compactMap(\.text).joined() }
}
