import AppStore
import Foundation
import Logging
import PipelineRecords
import TestSupport
import Testing
import VerifyService

/// The verified topic's JSON Schema against what the encoder really writes.
///
/// `WRITE_SCHEMA_EXAMPLES=1 swift test --filter SchemaTests` regenerates
/// `schemas/examples/verified.v1/*.json` from this run's records.
@Suite("verified.v1 schema")
struct SchemaTests {
    /// One record of each shape, made by the stage from test-CA data.
    static func records() async throws -> [(name: String, record: VerifiedRecord)] {
        let stage = try VerifyStage(configuration: TestPKI.configuration(), logger: Logger(label: "tests"))
        let notification = try await stage.verify(
            rawBody: TestPKI.webhookBody(try TestPKI.notification(originalTransactionId: "2000000000000001")), source: "apple-webhook")
        let test = try await stage.verify(
            rawBody: TestPKI.webhookBody(try TestPKI.testNotification(uuid: "9f4c2a1e-3b5d-4e6f-8a7b-0c1d2e3f4a5b")),
            source: "apple-webhook")
        let upload = try await stage.verify(
            rawBody: TestPKI.uploadBody(
                try TestPKI.signedTransaction(originalTransactionId: "2000000000000002"),
                appAccountToken: "0b7e2c55-9d0e-4a53-8d55-2f1d3c6f4a10", userId: "user-42"),
            source: "app-upload")
        return [("subscribed-initial-buy", notification), ("test-notification", test), ("app-upload", upload)]
    }

    @Test("every record shape the encoder writes validates against verified.v1.schema.json")
    func encoderOutputValidates() async throws {
        let records = try await Self.records()
        let bodies = try records.map { try $0.record.encoded() }
        let errors = try await SchemaValidator.errors(of: bodies, schema: "verified.v1.schema.json")
        #expect(errors.isEmpty, "\(errors)")
        // The schema is strict enough to catch a record of the wrong shape.
        var broken = records[2].record
        broken.signedPayload = records[0].record.signedPayload
        #expect(try await SchemaValidator.errors(of: [try broken.encoded()], schema: "verified.v1.schema.json").count > 0)

        if ProcessInfo.processInfo.environment["WRITE_SCHEMA_EXAMPLES"] == "1" {
            let dir = TestServices.repositoryRoot.appendingPathComponent("schemas/examples/verified.v1")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for ((name, _), body) in zip(records, bodies) {
                let object = try JSONSerialization.jsonObject(with: Data(body))
                let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                try (pretty + Data("\n".utf8)).write(to: dir.appendingPathComponent("\(name).json"))
            }
        }
    }

    @Test(
        "deploy/local/check_schemas.py passes (every schema, example and invalid example)",
        .enabled(Comment(rawValue: CheckoutPython.skipReason(["jsonschema"]))) { await CheckoutPython.has(["jsonschema"]) || TestServices.isCI })
    func checkSchemas() async throws {
        _ = try await CheckoutPython.require(["jsonschema"])
        let result = try await CheckoutPython.run(["deploy/local/check_schemas.py"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("schemas ok"))
    }
}
