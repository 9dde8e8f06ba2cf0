import Foundation

/// Validates JSON documents against a schema under `schemas/` with Python's `jsonschema`, the
/// validator `deploy/local/check_schemas.py` uses.
public enum SchemaValidator {
    /// True when `python3` with `jsonschema` is installed (always expected in CI).
    public static let isAvailable: Bool = {
        (try? runPython(["-c", "import jsonschema"]).status) == 0
    }()

    /// The validation errors of each document (empty when all validate).
    public static func errors(of documents: [[UInt8]], schema: String) async throws -> [String] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("schema-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (index, document) in documents.enumerated() {
            try Data(document).write(to: dir.appendingPathComponent("\(index).json"))
        }
        let script = """
            import json, pathlib, sys, jsonschema
            from referencing import Registry, Resource
            path = pathlib.Path(sys.argv[1])
            schema = json.loads(path.read_text())
            others = (json.loads(p.read_text()) for p in path.parent.glob("*.schema.json"))
            registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in others if "$id" in s)
            v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker(), registry=registry)
            for p in sorted(pathlib.Path(sys.argv[2]).glob("*.json")):
                for e in v.iter_errors(json.loads(p.read_text())):
                    print(f"{p.name}: {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
            """
        let schemaPath = TestServices.repositoryRoot.appendingPathComponent("schemas/\(schema)").path
        let result = try await runPythonOffPool(["-c", script, schemaPath, dir.path])
        guard result.status == 0 else { throw TestSupportError("the schema validator failed: \(result.output)") }
        return result.output.split(separator: "\n").map(String.init)
    }

    /// ``runPython(_:)`` on a thread of its own: waiting for Python on the cooperative pool (two
    /// threads on two cores) would stall every suite running beside the caller.
    public static func runPythonOffPool(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runPython(arguments) }) }.start()
        }
    }

    /// Runs python3 with `arguments` in the repository root; returns the status and combined output.
    public static func runPython(_ arguments: [String]) throws -> (status: Int32, output: String) {
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
