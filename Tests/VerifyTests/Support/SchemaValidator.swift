import Foundation
import TestSupport

/// Validates JSON documents against a schema under `schemas/` with Python's `jsonschema`, the
/// validator `deploy/local/check_schemas.py` uses.
enum SchemaValidator {
    /// True when `python3` with `jsonschema` is installed (always expected in CI).
    static let isAvailable: Bool = {
        (try? runPython(["-c", "import jsonschema"]).status) == 0
    }()

    /// The validation errors of each document (empty when all validate).
    static func errors(of documents: [[UInt8]], schema: String) throws -> [String] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("schema-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (index, document) in documents.enumerated() {
            try Data(document).write(to: dir.appendingPathComponent("\(index).json"))
        }
        let script = """
            import json, pathlib, sys, jsonschema
            schema = json.loads(pathlib.Path(sys.argv[1]).read_text())
            v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
            for p in sorted(pathlib.Path(sys.argv[2]).glob("*.json")):
                for e in v.iter_errors(json.loads(p.read_text())):
                    print(f"{p.name}: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
            """
        let schemaPath = TestServices.repositoryRoot.appendingPathComponent("schemas/\(schema)").path
        let result = try runPython(["-c", script, schemaPath, dir.path])
        guard result.status == 0 else { throw TestSupportError("the schema validator failed: \(result.output)") }
        return result.output.split(separator: "\n").map(String.init)
    }

    /// Runs python3 with `arguments` in the repository root; returns the status and combined output.
    static func runPython(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        process.currentDirectoryURL = TestServices.repositoryRoot
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("py-\(UUID().uuidString.prefix(8)).log")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: out) }
        let handle = try FileHandle(forWritingTo: out)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOf: out, encoding: .utf8)) ?? "")
    }
}
