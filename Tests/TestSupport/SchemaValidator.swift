import Foundation

/// Validates JSON documents against a schema under `schemas/`, in Swift (``JSONSchemaSet``): no
/// tool to install, so no schema check can be skipped for want of one.
public enum SchemaValidator {
    /// The validation errors of each document (empty when all validate), each prefixed with the
    /// document's index.
    public static func errors(of documents: [[UInt8]], schema: String) async throws -> [String] {
        let schemas = try JSONSchemaSet.repository.get()
        var errors: [String] = []
        for (index, document) in documents.enumerated() {
            errors += try schemas.errors(of: document, schema: schema).map { "\(index): \($0)" }
        }
        return errors
    }

    /// The schema file of a topic in the catalogue (`schemas/topics.json`), `nil` for a topic
    /// without one (the dead-letter topics carry the failed record unchanged).
    public static func schema(ofTopic name: String) throws -> String? {
        struct Catalogue: Decodable {
            struct Topic: Decodable {
                let name: String
                let schema: String?
            }
            let topics: [Topic]
        }
        let url = TestServices.repositoryRoot.appendingPathComponent("schemas/topics.json")
        let catalogue = try JSONDecoder().decode(Catalogue.self, from: Data(contentsOf: url))
        guard let topic = catalogue.topics.first(where: { $0.name == name }) else {
            throw TestSupportError("schemas/topics.json has no topic \(name)")
        }
        return topic.schema
    }
}

/// The checkout's Python environment (`.local/python`, or `$APPSTORE_STATE_DIR/python`) that
/// `deploy/local/setup` installs: Apple's library, `jsonschema`, `opentelemetry-proto`. Tests that
/// need it run when it is there; outside CI they skip, saying why; in CI (`CI=true`) they fail
/// with ``require(_:)``'s message.
public enum CheckoutPython {
    /// The interpreter's path, whether or not it is installed.
    public static var path: URL {
        let state =
            ProcessInfo.processInfo.environment["APPSTORE_STATE_DIR"].map { URL(fileURLWithPath: $0) }
            ?? TestServices.repositoryRoot.appendingPathComponent(".local")
        return state.appendingPathComponent("python/bin/python")
    }

    /// Whether the interpreter is there and imports each of `modules`.
    public static func has(_ modules: [String]) async -> Bool {
        guard FileManager.default.isExecutableFile(atPath: path.path) else { return false }
        return (try? await run(["-c", "import \(modules.joined(separator: ", "))"]).status) == 0
    }

    /// The interpreter, when it imports each of `modules`; otherwise an error saying what is
    /// missing and how to get it.
    public static func require(_ modules: [String]) async throws -> URL {
        guard FileManager.default.isExecutableFile(atPath: path.path) else {
            throw TestSupportError("\(path.path) is missing: run deploy/local/setup, which installs the checkout's Python environment")
        }
        let check = try await run(["-c", "import \(modules.joined(separator: ", "))"])
        guard check.status == 0 else {
            throw TestSupportError(
                "\(path.path) cannot import \(modules.joined(separator: ", ")): run deploy/local/setup, which installs them (\(check.output.suffix(300)))"
            )
        }
        return path
    }

    /// Why a test that needs `modules` does not run here (outside CI only).
    public static func skipReason(_ modules: [String]) -> String {
        "\(path.path) with \(modules.joined(separator: ", ")) is missing (deploy/local/setup installs it); with CI=true this fails instead"
    }

    /// Runs the interpreter with `arguments` in the repository root; returns the status and the
    /// output, standard error merged into standard output as it comes.
    public static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let result = try await ManagedProcess.run(path, arguments, workingDirectory: TestServices.repositoryRoot, streams: .merged)
        return (result.status, result.output)
    }
}
