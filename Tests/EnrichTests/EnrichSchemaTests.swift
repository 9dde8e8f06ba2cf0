import AppStore
import AppStoreSimulator
import EnrichService
import Foundation
import KafkaClient
import PipelineRecords
import TestSupport
import Testing

/// The enriched topic's JSON Schema against what the stage really writes.
///
/// `WRITE_SCHEMA_EXAMPLES=1 swift test --filter EnrichSchemaTests` regenerates
/// `schemas/examples/enriched.v1/*.json` from this run's records.
@Suite("enriched.v1 schema", .timeLimit(.minutes(15)))
struct EnrichSchemaTests {
    @Test("every lookup kind the stage writes validates against enriched.v1.schema.json; a wrong shape does not")
    func stageOutputValidates() async throws {
        let sim = try await RunningSimulator.start()
        defer { Task { await sim.stop() } }
        let t0 = Date(timeIntervalSince1970: 1_790_000_000)
        let token = UUID(uuidString: "0B7E2C55-9D0E-4A53-8D55-2F1D3C6F4A10")!
        let initial = SimFixture.transaction(original: "2000000000900000", id: "2000000000900000", purchased: t0, token: token)
        let renewal = SimFixture.transaction(original: "2000000000900000", id: "2000000000900001", purchased: t0.addingTimeInterval(30 * 86_400))
        let consumable = SimFixture.transaction(original: "2000000000900500", id: "2000000000900500", purchased: t0, type: .consumable)
        try sim.apple.store.upsert([renewal, initial, consumable])
        let inputs: [(String, VerifiedRecord)] = [
            ("subscription-renewal-history", EnrichFixture.notification(renewal, uuid: "5d2f7a0e-1c3b-4e5f-8a9b-0c1d2e3f4a5b")),
            ("consumable-upload", EnrichFixture.upload(consumable, hint: token)),
            ("test-notification", EnrichFixture.testNotification()),
        ]
        let stage = try EnrichFixture.stage(sim)
        let results = try await stage.process(batch: try inputs.enumerated().map { try EnrichFixture.message($1.1, offset: Int64($0)) })
        let bodies = try results.map { try $0.get()[0].value }
        let errors = try await SchemaValidator.errors(of: bodies, schema: "enriched.v1.schema.json")
        #expect(errors.isEmpty, "\(errors)")

        var broken = try EnrichedRecord.decode(bodies[1])
        broken.enrichment.history = [initial]  // history on a transaction-only record
        #expect(try await SchemaValidator.errors(of: [try broken.encoded()], schema: "enriched.v1.schema.json").count > 0)
        var tokenWithoutSource = try EnrichedRecord.decode(bodies[0])
        tokenWithoutSource.enrichment.appAccountTokenSource = nil
        #expect(try await SchemaValidator.errors(of: [try tokenWithoutSource.encoded()], schema: "enriched.v1.schema.json").count > 0)

        if ProcessInfo.processInfo.environment["WRITE_SCHEMA_EXAMPLES"] == "1" {
            let dir = TestServices.repositoryRoot.appendingPathComponent("schemas/examples/enriched.v1")
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("invalid"), withIntermediateDirectories: true)
            func write(_ body: [UInt8], _ path: String) throws {
                let object = try JSONSerialization.jsonObject(with: Data(body))
                let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                try (pretty + Data("\n".utf8)).write(to: dir.appendingPathComponent(path))
            }
            for ((name, _), body) in zip(inputs, bodies) { try write(body, "\(name).json") }
            try write(try broken.encoded(), "invalid/history-on-transaction-only.json")
            try write(try tokenWithoutSource.encoded(), "invalid/token-without-source.json")
        }
    }
}
