import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A parsed XML element: the small DOM the manifest parser maps from.
struct XMLNode: Sendable {
    var name: String
    var attributes: [String: String]
    var children: [XMLNode]
    var text: String

    func child(_ name: String) -> XMLNode? { children.first { $0.name == name } }
    func children(_ name: String) -> [XMLNode] { children.filter { $0.name == name } }
    subscript(attribute: String) -> String? { attributes[attribute] }
}

/// Why a document could not be turned into an ``XMLNode`` tree.
enum XMLTreeError: Error, Equatable {
    case tooLarge(Int)
    case doctypeRefused
    case malformed(line: Int, column: Int, reason: String)
    case empty
}

/// Builds an ``XMLNode`` tree with FoundationXML's `XMLParser`, refusing DTDs (no entity
/// expansion, no external fetches), documents over `maxBytes` and trees past ``Limits``: an
/// untrusted manifest never makes a tree deep enough to overflow a stack (walking or freeing
/// it recurses), nor an element or attribute count that eats the memory.
enum XMLTree {
    /// The bounds on an untrusted document's tree. A real MPD is under 10 elements deep, a few
    /// thousand elements (a long SegmentTimeline), attributes under a kilobyte (a base64 PSSH).
    struct Limits: Sendable {
        var depth = 64
        var elements = 200_000
        var attributeBytes = 64 << 10
    }

    static func parse(_ data: Data, maxBytes: Int, limits: Limits = Limits()) throws(XMLTreeError) -> XMLNode {
        guard data.count <= maxBytes else { throw .tooLarge(data.count) }
        if containsDoctype(data) { throw .doctypeRefused }
        // FoundationXML traps on a name that is not UTF-8 (`<Se\u{FF}g/>`: it force-unwraps the
        // name's String), before libxml2 reports the error: such a document goes no further.
        guard String(validating: data, as: UTF8.self) != nil else {
            throw .malformed(line: 0, column: 0, reason: "the document is not UTF-8 text")
        }
        // FoundationXML leaks about 0.45 KiB (a CFError) per malformed document: a live
        // manifest that stays broken, reloaded every 2 s, would cost 19 MiB a day. The same
        // bytes as the last malformed document give its error again without parsing.
        if let known = lastMalformed.withLock({ $0 }), known.data == data { throw known.error }
        do {
            return try parseWellFormed(data, limits: limits)
        } catch {
            if case .malformed = error { lastMalformed.withLock { $0 = (data, error) } }
            throw error
        }
    }

    /// The last document FoundationXML found malformed, and its error.
    private static let lastMalformed = Locked<(data: Data, error: XMLTreeError)?>(nil)

    private static func parseWellFormed(_ data: Data, limits: Limits) throws(XMLTreeError) -> XMLNode {
        let builder = Builder(limits: limits)
        let parser = XMLParser(data: try withoutInstructions(data))
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        parser.delegate = builder
        if !parser.parse() || builder.failure != nil {
            let reason = builder.failure ?? parser.parserError.map { "\($0)" } ?? "not well-formed"
            throw .malformed(line: parser.lineNumber, column: parser.columnNumber, reason: reason)
        }
        guard let root = builder.root else { throw .empty }
        return root
    }

    /// `data` with every processing instruction (the XML declaration among them) blanked out,
    /// newlines kept: FoundationXML hands an instruction's data to a C string function even when
    /// libxml2 gives it none (`<?x?>`, `<?a?b …`, `<?<?x?>`, a declaration after the start:
    /// found by fuzzing, each a crash on a NULL pointer), so libxml2 never sees one. The parser
    /// ignores instructions anyway, and the document must be UTF-8 whatever its declaration
    /// says. In comments and CDATA sections a `<?` loses its `?` (their text is not read as
    /// markup; a `<?` in an event's CDATA message reads `< `); an instruction that never ends
    /// is malformed.
    private static func withoutInstructions(_ data: Data) throws(XMLTreeError) -> Data {
        var bytes = [UInt8](data)
        let comment = Array("<!--".utf8)
        let commentEnd = Array("-->".utf8)
        let cdata = Array("<![CDATA[".utf8)
        let cdataEnd = Array("]]>".utf8)
        let instructionEnd = Array("?>".utf8)
        func starts(_ p: [UInt8], at i: Int) -> Bool {
            i + p.count <= bytes.count && bytes[i..<i + p.count].elementsEqual(p)
        }
        func skip(to end: [UInt8], from i: Int) -> Int {
            var k = i
            while k < bytes.count, !starts(end, at: k) { k += 1 }
            return k
        }
        var blanked = false
        /// `<?` inside what reads as a comment or CDATA section becomes `< `: in a malformed
        /// document libxml2 may not read it as one (a `<!--` inside a start tag) and would take
        /// the instruction for one (a fuzz input).
        func defuse(_ range: Range<Int>) {
            for k in range.dropLast() where bytes[k] == UInt8(ascii: "<") && bytes[k + 1] == UInt8(ascii: "?") {
                bytes[k + 1] = 0x20
                blanked = true
            }
        }
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] != UInt8(ascii: "<") {
                i += 1
            } else if starts(comment, at: i) {
                let end = skip(to: commentEnd, from: i + 4)
                defuse(i..<min(end + 1, bytes.count))
                i = end
            } else if starts(cdata, at: i) {
                let end = skip(to: cdataEnd, from: i + 9)
                defuse(i..<min(end + 1, bytes.count))
                i = end
            } else if bytes[i + 1] == UInt8(ascii: "?") {
                let end = skip(to: instructionEnd, from: i + 2)
                guard end < bytes.count else {
                    let line = bytes[..<i].reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
                    throw .malformed(line: line, column: 0, reason: "a processing instruction without its ?>")
                }
                for k in i..<(end + 2) where bytes[k] != 0x0A { bytes[k] = 0x20 }
                blanked = true
                i = end + 2
            } else {
                i += 1
            }
        }
        return blanked ? Data(bytes) : data
    }

    /// `<!DOCTYPE` anywhere before the root element (case-insensitive, any whitespace).
    private static func containsDoctype(_ data: Data) -> Bool {
        let needle = Array("<!doctype".utf8)
        return data.withUnsafeBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= needle.count else { return false }
            for i in 0...(bytes.count - needle.count) where bytes[i] == UInt8(ascii: "<") {
                var match = true
                for j in 1..<needle.count where (bytes[i + j] | 0x20) != needle[j] && bytes[i + j] != needle[j] {
                    match = false
                    break
                }
                if match { return true }
            }
            return false
        }
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [XMLNode] = []
        var root: XMLNode?
        var failure: String?
        let limits: Limits
        var elements = 0

        init(limits: Limits) { self.limits = limits }

        private func refuse(_ parser: XMLParser, _ why: String) {
            if failure == nil { failure = why }
            parser.abortParsing()
        }

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            guard failure == nil else { return }
            elements += 1
            guard stack.count < limits.depth else {
                return refuse(parser, "elements nested deeper than \(limits.depth)")
            }
            guard elements <= limits.elements else { return refuse(parser, "more than \(limits.elements) elements") }
            if let long = attributeDict.first(where: { $0.value.utf8.count > limits.attributeBytes }) {
                return refuse(
                    parser, "attribute \(long.key) of <\(elementName)> is longer than \(limits.attributeBytes) bytes")
            }
            // Namespace prefixes (xsi:, cenc:, …) are kept verbatim; DASH elements are unprefixed.
            stack.append(XMLNode(name: elementName, attributes: attributeDict, children: [], text: ""))
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?
        ) {
            guard failure == nil, let node = stack.popLast() else { return }
            if stack.isEmpty {
                root = node
            } else {
                stack[stack.count - 1].children.append(node)
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard failure == nil, !stack.isEmpty else { return }
            guard stack[stack.count - 1].text.utf8.count + string.utf8.count <= limits.attributeBytes else {
                return refuse(
                    parser, "text of <\(stack[stack.count - 1].name)> is longer than \(limits.attributeBytes) bytes")
            }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, foundCDATA block: Data) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += String(decoding: block, as: UTF8.self)
        }

        func parser(
            _ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?
        ) {
            failure = "entity declarations are refused"
            parser.abortParsing()
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            if failure == nil { failure = "\(parseError)" }
        }
    }
}
