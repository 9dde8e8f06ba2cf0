import ErrorClassification
import Foundation
import KafkaClient
import LogKeys
import TestSupport
import Testing

/// One error-code scheme: every code constant in the sources is `<area>.<reason>` and
/// schemas/headers.md documents it, and the document lists no code the sources do not have.
@Suite("Error codes")
struct ErrorCodeTests {
    static func isScheme(_ code: String) -> Bool { code.wholeMatch(of: #/[a-z_]+\.[a-z0-9_]+/#) != nil }

    /// The sources' code literals: every `Code(rawValue: "…")` / `Code("…")` constant (the `Code`
    /// types of the error types), the operator tool's `migrate.*` / `topics.*` codes, and the
    /// gateway's `"code":"…"` answers. Interpolated ones (`apple_api.\(errorCode)`) are returned apart,
    /// as their fixed prefix.
    static func sourceCodes() throws -> (codes: Set<String>, prefixes: Set<String>) {
        let root = TestServices.repositoryRoot
        var codes = Set<String>()
        var prefixes = Set<String>()
        let files = FileManager.default.enumerator(at: root.appendingPathComponent("Sources"), includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            for match in text.matches(of: #/Code\((?:rawValue: )?"([^"]*)"\)/#) {
                let literal = String(match.output.1)
                if let interpolation = literal.range(of: "\\(") {
                    prefixes.insert(String(literal[..<interpolation.lowerBound]))
                } else {
                    codes.insert(literal)
                }
            }
            for match in text.matches(of: #/"((?:migrate|topics)\.[a-z0-9_]+)"/#) { codes.insert(String(match.output.1)) }
        }
        let gateway = try String(
            contentsOf: root.appendingPathComponent("deploy/gateway/templates/gateway.conf.template"), encoding: .utf8)
        for match in gateway.matches(of: #/"code":"([^"]*)"/#) { codes.insert(String(match.output.1)) }
        return (codes, prefixes)
    }

    /// The "Error codes" section of schemas/headers.md.
    static func documentation() throws -> String {
        let text = try String(contentsOf: TestServices.repositoryRoot.appendingPathComponent("schemas/headers.md"), encoding: .utf8)
        let start = try #require(text.range(of: "## Error codes"))
        let rest = text[start.upperBound...]
        let end = rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex
        return String(rest[..<end])
    }

    @Test("every code constant is <area>.<reason> in lower snake case")
    func scheme() throws {
        let (codes, prefixes) = try Self.sourceCodes()
        // The scan must see the Code types at all: a few constants this suite can name.
        for known in [StageError.Code.malformedRecord.rawValue, KafkaError.Code.deliveryFailed.rawValue, "gateway.plain_http"] {
            #expect(codes.contains(known), "the scan missed \(known)")
        }
        #expect(codes.count > 100, "only \(codes.count) codes found")
        for code in codes.sorted() {
            #expect(Self.isScheme(code), "\(code) is not <area>.<reason>")
        }
        for prefix in prefixes.sorted() {
            #expect(prefix.wholeMatch(of: #/[a-z_]+\.[a-z0-9_]*/#) != nil, "\(prefix)… is not <area>.<reason>")
        }
    }

    @Test("schemas/headers.md lists every code, and only codes that exist")
    func documented() throws {
        let (codes, prefixes) = try Self.sourceCodes()
        let section = try Self.documentation()
        for code in codes.sorted() {
            #expect(section.contains("`\(code)`"), "schemas/headers.md does not list \(code)")
        }
        for prefix in prefixes.sorted() {
            #expect(section.contains("`\(prefix)<"), "schemas/headers.md does not list the pattern \(prefix)<…>")
        }
        // The first column of the code tables: each code there must still exist.
        for line in section.split(separator: "\n") where line.hasPrefix("| `") {
            let first = line.dropFirst(2).prefix { $0 != "|" }
            for match in first.matches(of: #/`([^`]+)`/#) {
                let code = String(match.output.1)
                guard Self.isScheme(code) else { continue }
                #expect(codes.contains(code), "schemas/headers.md lists \(code), which no source raises")
            }
        }
    }
}

/// One set of log-key names: `LogKey` names every key once, in one style, and no source spells a
/// key as a literal.
@Suite("Log keys")
struct LogKeyTests {
    @Test("every LogKey is dotted lower snake case, and no two constants share a key")
    func style() throws {
        let file = TestServices.repositoryRoot.appendingPathComponent("Sources/0-Base/LogKeys/LogKey.swift")
        let keys = try String(contentsOf: file, encoding: .utf8).matches(of: #/static let \w+ = "([^"]*)"/#).map { String($0.output.1) }
        #expect(keys.count > 50 && keys.contains(LogKey.topic) && keys.contains(LogKey.errorCode))
        for key in keys {
            #expect(key == LogKey.error || key.wholeMatch(of: #/[a-z]+(\.[a-z0-9_]+)+/#) != nil, "\(key) is not <area>.<name>")
        }
        #expect(Set(keys).count == keys.count, "a key is named twice")
    }

    @Test("no source writes a metadata key as a string literal")
    func constants() throws {
        let root = TestServices.repositoryRoot.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        var offenders: [String] = []
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift", url.lastPathComponent != "LogKey.swift" else { continue }
            let text = try String(contentsOf: url, encoding: .utf8)
            for line in text.split(separator: "\n")
            where line.contains(#/"[A-Za-z_.]+": *"\\\(|metadata\[ *"|metadataKey: *"|metadata: *\[ *"/#) {
                offenders.append("\(url.lastPathComponent): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(offenders.isEmpty, "use LogKey: \(offenders)")
    }
}
