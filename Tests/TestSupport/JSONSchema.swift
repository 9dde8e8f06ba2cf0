import Foundation

/// A JSON document as the schema validator sees it.
public indirect enum JSONSchemaValue: Equatable, Sendable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONSchemaValue])
    case object([String: JSONSchemaValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONSchemaValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONSchemaValue].self))
        }
    }

    public init(json: some Sequence<UInt8>) throws {
        self = try JSONDecoder().decode(JSONSchemaValue.self, from: Data(json))
    }

    /// The JSON Schema type names the value has ("integer" is also a "number").
    var types: Set<String> {
        switch self {
        case .null: ["null"]
        case .bool: ["boolean"]
        case .number(let n): n.rounded() == n && n.isFinite ? ["number", "integer"] : ["number"]
        case .string: ["string"]
        case .array: ["array"]
        case .object: ["object"]
        }
    }

    var object: [String: JSONSchemaValue]? { if case .object(let o) = self { o } else { nil } }
    var string: String? { if case .string(let s) = self { s } else { nil } }
    var number: Double? { if case .number(let n) = self { n } else { nil } }
    var array: [JSONSchemaValue]? { if case .array(let a) = self { a } else { nil } }
}

/// The JSON Schemas under `schemas/` (draft 2020-12), validated in Swift with no tool to install.
///
/// It knows the keywords those schemas use, and refuses to load a schema with any other: a keyword
/// it ignored would let a document pass unchecked. Formats checked: `uuid`. `schemas/examples/`
/// (each valid example passes, each `invalid/` one fails) holds it to what `deploy/local/check_schemas.py`
/// decides with Python's `jsonschema`.
public struct JSONSchemaSet: Sendable {
    /// Keywords that constrain a document.
    static let assertions: Set<String> = [
        "$ref", "type", "enum", "const", "properties", "additionalProperties", "required", "dependentRequired", "minProperties",
        "items", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "minimum", "allOf", "anyOf", "oneOf", "not",
        "if", "then", "else",
    ]
    /// Keywords that only describe or name.
    static let annotations: Set<String> = ["$schema", "$id", "$defs", "$comment", "title", "description", "examples", "default"]

    /// Each schema by file name.
    let schemas: [String: JSONSchemaValue]
    /// File names by `$id`.
    let ids: [String: String]

    /// Every `*.schema.json` of `directory` (by default the repository's `schemas/`).
    public static func load(_ directory: URL = TestServices.repositoryRoot.appendingPathComponent("schemas")) throws -> JSONSchemaSet {
        var schemas: [String: JSONSchemaValue] = [:]
        var ids: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".schema.json") {
            let schema = try JSONSchemaValue(json: try Data(contentsOf: directory.appendingPathComponent(name)))
            try checkKeywords(schema, at: name)
            schemas[name] = schema
            if let id = schema.object?["$id"]?.string { ids[id] = name }
        }
        return JSONSchemaSet(schemas: schemas, ids: ids)
    }

    /// The schemas of `schemas/`, loaded once.
    public static let repository: Result<JSONSchemaSet, any Error> = Result { try load() }

    /// The validation errors of `document` against the schema file `schema` (empty when it validates).
    public func errors(of document: some Sequence<UInt8>, schema: String) throws -> [String] {
        guard let root = schemas[schema] else { throw TestSupportError("no schema \(schema) under schemas/") }
        let value: JSONSchemaValue
        do {
            value = try JSONSchemaValue(json: document)
        } catch {
            return ["not JSON: \(error)"]
        }
        var errors: [String] = []
        try validate(value, against: root, file: schema, path: "", errors: &errors)
        return errors
    }

    /// Fails loading when a schema uses a keyword the validator does not check.
    static func checkKeywords(_ schema: JSONSchemaValue, at location: String) throws {
        guard case .object(let object) = schema else {
            if case .bool = schema { return }
            throw TestSupportError("\(location): a schema must be an object or a boolean")
        }
        for (key, value) in object {
            guard assertions.contains(key) || annotations.contains(key) else {
                throw TestSupportError(
                    "\(location): the Swift schema validator does not check the keyword \(key); teach it (Tests/TestSupport/JSONSchema.swift)")
            }
            switch key {
            case "properties", "$defs":
                for (name, sub) in value.object ?? [:] { try checkKeywords(sub, at: "\(location)/\(key)/\(name)") }
            case "additionalProperties", "items", "not", "if", "then", "else":
                try checkKeywords(value, at: "\(location)/\(key)")
            case "allOf", "anyOf", "oneOf":
                for (index, sub) in (value.array ?? []).enumerated() { try checkKeywords(sub, at: "\(location)/\(key)/\(index)") }
            case "format":
                guard value.string == "uuid" else { throw TestSupportError("\(location): the format \(value) is not checked; teach the validator") }
            default:
                break
            }
        }
    }

    /// The schema a `$ref` names: `#/$defs/x` in `file`, or `other.schema.json[#/...]` (by file
    /// name or `$id`).
    func resolve(_ reference: String, from file: String) throws -> (schema: JSONSchemaValue, file: String) {
        let parts = reference.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        var target = file
        if !parts[0].isEmpty {
            let name = parts[0].split(separator: "/").last.map(String.init) ?? parts[0]
            guard let found = ids[parts[0]] ?? (schemas[name] != nil ? name : nil) else {
                throw TestSupportError("\(file): $ref \(reference) names no schema under schemas/")
            }
            target = found
        }
        var schema = schemas[target]!
        let pointer = parts.count > 1 ? parts[1] : ""
        for token in pointer.split(separator: "/") {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            guard let next = schema.object?[key] else { throw TestSupportError("\(file): $ref \(reference) points at nothing") }
            schema = next
        }
        return (schema, target)
    }

    func validate(_ value: JSONSchemaValue, against schema: JSONSchemaValue, file: String, path: String, errors: inout [String]) throws {
        if case .bool(let allowed) = schema {
            if !allowed { errors.append("\(path.isEmpty ? "/" : path): nothing is allowed here") }
            return
        }
        guard let keywords = schema.object else { return }
        func fail(_ message: String) { errors.append("\(path.isEmpty ? "/" : path): \(message)") }
        func passes(_ sub: JSONSchemaValue) throws -> Bool {
            var ignored: [String] = []
            try validate(value, against: sub, file: file, path: path, errors: &ignored)
            return ignored.isEmpty
        }

        if let reference = keywords["$ref"]?.string {
            let (target, targetFile) = try resolve(reference, from: file)
            try validate(value, against: target, file: targetFile, path: path, errors: &errors)
        }
        if let type = keywords["type"] {
            let allowed = type.array?.compactMap(\.string) ?? [type.string].compactMap { $0 }
            if value.types.isDisjoint(with: allowed) { fail("\(Self.describe(value)) is not of type \(allowed.joined(separator: " or "))") }
        }
        if let options = keywords["enum"]?.array, !options.contains(value) {
            fail("\(Self.describe(value)) is not one of \(options.map(Self.describe))")
        }
        if let constant = keywords["const"], constant != value { fail("\(Self.describe(value)) is not \(Self.describe(constant))") }
        if case .string(let string) = value {
            let length = string.unicodeScalars.count
            if let min = keywords["minLength"]?.number, Double(length) < min { fail("\(Self.describe(value)) is shorter than \(Int(min))") }
            if let max = keywords["maxLength"]?.number, Double(length) > max { fail("a string of \(length) characters is longer than \(Int(max))") }
            if let pattern = keywords["pattern"]?.string, try !Self.matches(string, pattern) {
                fail("\(Self.describe(value)) does not match \(pattern)")
            }
            if keywords["format"]?.string == "uuid", !Self.isUUID(string) { fail("\(Self.describe(value)) is not a uuid") }
        }
        if case .number(let number) = value, let min = keywords["minimum"]?.number, number < min { fail("\(number) is less than \(min)") }
        if case .array(let items) = value {
            if let min = keywords["minItems"]?.number, Double(items.count) < min { fail("\(items.count) items, fewer than \(Int(min))") }
            if let max = keywords["maxItems"]?.number, Double(items.count) > max { fail("\(items.count) items, more than \(Int(max))") }
            if let itemSchema = keywords["items"] {
                for (index, item) in items.enumerated() {
                    try validate(item, against: itemSchema, file: file, path: "\(path)/\(index)", errors: &errors)
                }
            }
        }
        if case .object(let object) = value {
            for name in keywords["required"]?.array?.compactMap(\.string) ?? [] where object[name] == nil {
                fail("\(name) is a required property")
            }
            for (name, needed) in keywords["dependentRequired"]?.object ?? [:] where object[name] != nil {
                for other in needed.array?.compactMap(\.string) ?? [] where object[other] == nil {
                    fail("\(other) is required when \(name) is present")
                }
            }
            if let min = keywords["minProperties"]?.number, Double(object.count) < min { fail("\(object.count) properties, fewer than \(Int(min))") }
            let properties = keywords["properties"]?.object ?? [:]
            for (name, member) in object.sorted(by: { $0.key < $1.key }) {
                if let propertySchema = properties[name] {
                    try validate(member, against: propertySchema, file: file, path: "\(path)/\(name)", errors: &errors)
                } else if let additional = keywords["additionalProperties"] {
                    if case .bool(false) = additional {
                        fail("additional property \(name) is not allowed")
                    } else {
                        try validate(member, against: additional, file: file, path: "\(path)/\(name)", errors: &errors)
                    }
                }
            }
        }
        for sub in keywords["allOf"]?.array ?? [] { try validate(value, against: sub, file: file, path: path, errors: &errors) }
        if let options = keywords["anyOf"]?.array, try !options.contains(where: passes) {
            fail("\(Self.describe(value)) is valid under none of anyOf")
        }
        if let options = keywords["oneOf"]?.array {
            let passing = try options.filter(passes).count
            if passing != 1 { fail("valid under \(passing) of oneOf's \(options.count) schemas, not exactly one") }
        }
        if let negated = keywords["not"], try passes(negated) { fail("\(Self.describe(value)) must not be valid under not") }
        if let condition = keywords["if"] {
            let branch = try passes(condition) ? keywords["then"] : keywords["else"]
            if let branch { try validate(value, against: branch, file: file, path: path, errors: &errors) }
        }
    }

    static let regexCache = RegexCache()

    /// ECMA 262 patterns as JSON Schema reads them (a search, not anchored), with ICU.
    static func matches(_ string: String, _ pattern: String) throws -> Bool {
        let regex = try regexCache.regex(pattern)
        return regex.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) != nil
    }

    /// What Python's `jsonschema` checks for `format: uuid`: Python's UUID parses it and it has
    /// the hyphens of the canonical form.
    static func isUUID(_ string: String) -> Bool {
        let scalars = Array(string.unicodeScalars)
        guard scalars.count == 36 else { return false }
        for (index, scalar) in scalars.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard scalar == "-" else { return false }
            } else if !scalar.properties.isASCIIHexDigit {
                return false
            }
        }
        return true
    }

    static func describe(_ value: JSONSchemaValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .number(let n): n.rounded() == n && abs(n) < 1e15 ? "\(Int64(n))" : "\(n)"
        case .string(let s): "\"\(s.prefix(80))\(s.count > 80 ? "…" : "")\""
        case .array(let a): "an array of \(a.count)"
        case .object(let o): "an object with \(o.keys.sorted().prefix(6).joined(separator: ", "))"
        }
    }
}

/// Compiled patterns, shared by every validation (a debug build compiles slowly).
final class RegexCache: @unchecked Sendable {
    private let lock = NSLock()
    private var compiled: [String: NSRegularExpression] = [:]

    func regex(_ pattern: String) throws -> NSRegularExpression {
        lock.lock()
        defer { lock.unlock() }
        if let regex = compiled[pattern] { return regex }
        let regex = try NSRegularExpression(pattern: pattern)
        compiled[pattern] = regex
        return regex
    }
}
