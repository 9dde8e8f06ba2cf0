import Foundation
import TestSupport
import Testing

/// The Swift schema validator the tests use (``JSONSchemaSet``) decides like Python's
/// `jsonschema` in `deploy/local/check_schemas.py`: every example under `schemas/examples/`
/// validates and every `invalid/` one does not; and it refuses a schema it cannot check fully.
@Suite("record schemas, validated in Swift")
struct RecordSchemaTests {
    static let schemas = TestServices.repositoryRoot.appendingPathComponent("schemas")

    static func files(_ directory: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }.sorted { $0.path < $1.path }
    }

    @Test("every example validates against its schema and every invalid one fails")
    func examples() throws {
        let set = try JSONSchemaSet.repository.get()
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.schemas.path).filter { $0.hasSuffix(".schema.json") }.sorted()
        #expect(names.count == 4, "\(names)")
        var invalidChecked = 0
        for name in names {
            let examples = Self.schemas.appendingPathComponent("examples/\(name.replacingOccurrences(of: ".schema.json", with: ""))")
            let valid = try Self.files(examples)
            #expect(!valid.isEmpty, "no examples for \(name)")
            for example in valid {
                let errors = try set.errors(of: Array(try Data(contentsOf: example)), schema: name)
                #expect(errors.isEmpty, "\(example.lastPathComponent): \(errors)")
            }
            for example in try Self.files(examples.appendingPathComponent("invalid")) {
                invalidChecked += 1
                #expect(
                    try !set.errors(of: Array(try Data(contentsOf: example)), schema: name).isEmpty,
                    "\(name): invalid/\(example.lastPathComponent) validated")
            }
        }
        #expect(invalidChecked > 0)
    }

    @Test("the keywords the examples do not reach: uuid format, oneOf's exactly one, const, a $ref into another file")
    func keywords() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("schemas-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(#"{"$id": "https://x/a.schema.json", "$defs": {"id": {"type": "string", "format": "uuid"}}}"#.utf8)
            .write(to: dir.appendingPathComponent("a.schema.json"))
        try Data(
            #"{"type": "object", "additionalProperties": false, "required": ["id"], "properties": {"id": {"$ref": "a.schema.json#/$defs/id"}, "n": {"oneOf": [{"type": "integer"}, {"minimum": 5}]}, "k": {"const": "v"}}}"#
                .utf8
        ).write(to: dir.appendingPathComponent("b.schema.json"))
        let set = try JSONSchemaSet.load(dir)
        func errors(_ json: String) throws -> [String] { try set.errors(of: Array(json.utf8), schema: "b.schema.json") }
        #expect(try errors(#"{"id": "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10", "n": 3, "k": "v"}"#) == [])
        #expect(try errors(#"{"id": "0b7e2c559d0e4a538d552f1d3c6f4a10"}"#).count == 1, "a uuid without its hyphens")
        #expect(try errors(#"{"id": "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10", "n": 7}"#).count == 1, "7 is valid under both of oneOf")
        #expect(try errors(#"{"id": "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10", "n": 2.5}"#).count == 1, "2.5 is valid under neither")
        #expect(try errors(#"{"id": "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10", "k": "w", "extra": true}"#).count == 2)
        #expect(try errors(#"{"k": 1}"#).count == 2, "id missing; 1 is not the constant")
        #expect(try errors("not json") != [])

        try Data(#"{"patternProperties": {"^x": {"type": "string"}}}"#.utf8).write(to: dir.appendingPathComponent("c.schema.json"))
        #expect(throws: TestSupportError.self, "a keyword the validator does not check is refused, never ignored") { try JSONSchemaSet.load(dir) }
    }
}
