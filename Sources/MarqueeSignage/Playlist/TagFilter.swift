import Marquee

/// A filter over an item's tags, written as a small prefix expression (the content sources'
/// hashtag filters):
///
/// ```
/// sport                         items tagged "sport"
/// (and sport (or food comedy))  tagged "sport", and "food" or "comedy"
/// (not ads)                     not tagged "ads"
/// ```
///
/// A tag is a run of letters, digits and `_ - . : #` (a leading `#` is dropped: `#sport` is
/// `sport`); `and` and `or` take one or more operands, `not` exactly one. Tags and operators
/// are compared case-insensitively. An expression that cannot be read throws a
/// ``TagFilter/SyntaxError`` naming the column (1-based) where reading stopped.
public struct TagFilter: Sendable, Hashable, CustomStringConvertible {
    /// A parsed expression.
    indirect enum Node: Sendable, Hashable {
        case tag(String)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    /// Why an expression cannot be read, and where.
    public struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The column (1-based, in characters) where reading stopped.
        public var column: Int
        /// What is wrong there.
        public var message: String

        public var description: String { "tag filter, column \(column): \(message)" }
    }

    let root: Node
    /// The expression as written.
    public let expression: String

    /// The longest expression read, in characters.
    package static let maxLength = 4096
    /// The deepest nesting of parentheses read.
    package static let maxDepth = 32

    /// Parses `expression`.
    public init(_ expression: String) throws(SyntaxError) {
        guard expression.count <= Self.maxLength else {
            throw SyntaxError(column: Self.maxLength + 1, message: "longer than \(Self.maxLength) characters")
        }
        var reader = Reader(Array(expression))
        reader.skipSpace()
        guard !reader.atEnd else {
            throw SyntaxError(column: 1, message: "empty: a tag or (and …), (or …), (not …) expected")
        }
        let root = try reader.node(depth: 0)
        reader.skipSpace()
        if !reader.atEnd {
            let what =
                reader.peek == ")"
                ? "a ')' without its '('" : "more after the expression; several go in (and …) or (or …)"
            throw SyntaxError(column: reader.column, message: what)
        }
        self.root = root
        self.expression = expression
    }

    /// Whether an item with `tags` passes (case-insensitive).
    public func matches(_ tags: some Sequence<String>) -> Bool {
        let set = Set(tags.map(Self.normalized))
        return Self.evaluate(root, set)
    }

    public var description: String { expression }

    /// A tag as compared: lowercased, without a leading `#`.
    static func normalized(_ tag: String) -> String {
        let lower = tag.lowercased()
        return lower.hasPrefix("#") ? String(lower.dropFirst()) : lower
    }

    private static func evaluate(_ node: Node, _ tags: Set<String>) -> Bool {
        switch node {
        case .tag(let t): tags.contains(t)
        case .and(let nodes): nodes.allSatisfy { evaluate($0, tags) }
        case .or(let nodes): nodes.contains { evaluate($0, tags) }
        case .not(let n): !evaluate(n, tags)
        }
    }

    /// A recursive-descent reader over the expression's characters.
    private struct Reader {
        let chars: [Character]
        var index = 0

        init(_ chars: [Character]) { self.chars = chars }

        var atEnd: Bool { index >= chars.count }
        var peek: Character? { atEnd ? nil : chars[index] }
        var column: Int { index + 1 }

        static func isTagCharacter(_ c: Character) -> Bool {
            c.isLetter || c.isNumber || c == "_" || c == "-" || c == "." || c == ":" || c == "#"
        }

        mutating func skipSpace() {
            while let c = peek, c.isWhitespace { index += 1 }
        }

        /// A word (tag or operator) at the current position.
        mutating func word() -> String {
            let start = index
            while let c = peek, Self.isTagCharacter(c) { index += 1 }
            return String(chars[start..<index])
        }

        mutating func node(depth: Int) throws(SyntaxError) -> Node {
            skipSpace()
            guard let c = peek else {
                throw SyntaxError(column: column, message: "the expression ends where a tag or '(' was expected")
            }
            if c == ")" { throw SyntaxError(column: column, message: "a ')' where a tag or '(' was expected") }
            if c != "(" {
                let at = column
                let tag = word()
                guard !tag.isEmpty else {
                    throw SyntaxError(column: at, message: "'\(c)' cannot be in a tag (letters, digits and _ - . : #)")
                }
                let normalized = TagFilter.normalized(tag)
                guard !normalized.isEmpty else { throw SyntaxError(column: at, message: "'#' alone is no tag") }
                return .tag(normalized)
            }
            let open = column
            guard depth < TagFilter.maxDepth else {
                throw SyntaxError(column: open, message: "nested deeper than \(TagFilter.maxDepth)")
            }
            index += 1
            skipSpace()
            let at = column
            let op = word().lowercased()
            guard !op.isEmpty else {
                if peek == ")" { throw SyntaxError(column: at, message: "'()' is empty: and, or or not expected") }
                throw SyntaxError(column: at, message: "and, or or not expected after '('")
            }
            guard op == "and" || op == "or" || op == "not" else {
                throw SyntaxError(column: at, message: "'\(op)' is no operator: and, or or not expected after '('")
            }
            var operands: [Node] = []
            while true {
                skipSpace()
                guard let next = peek else { throw SyntaxError(column: open, message: "this '(' is never closed") }
                if next == ")" { break }
                operands.append(try node(depth: depth + 1))
            }
            let close = column
            index += 1
            switch op {
            case "not":
                guard operands.count == 1 else {
                    throw SyntaxError(column: close, message: "not takes one operand, this one has \(operands.count)")
                }
                return .not(operands[0])
            case "and":
                guard !operands.isEmpty else {
                    throw SyntaxError(column: close, message: "and takes one or more operands")
                }
                return operands.count == 1 ? operands[0] : .and(operands)
            default:
                guard !operands.isEmpty else {
                    throw SyntaxError(column: close, message: "or takes one or more operands")
                }
                return operands.count == 1 ? operands[0] : .or(operands)
            }
        }
    }
}
