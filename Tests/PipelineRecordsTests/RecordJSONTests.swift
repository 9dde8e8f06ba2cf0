import Foundation
import GrantWorkload
import JSONCoding
import PipelineRecords
import TestSupport
import Testing

@testable import AppStore

/// The records' direct readers (`Records+DirectJSON.swift`) against the general path
/// (`AppStoreJSON.decodeGenerally`): the same record or both fail, on generated lifecycles (every
/// kind of event the simulator plays), random damage to them, and hand-picked cases a shortcut
/// could get wrong (required members absent or null, unknown cases, repeated keys).
@Suite("Pipeline records: direct readers and the general path agree")
struct RecordJSONTests {
    static func agree(_ json: [UInt8]) -> Bool {
        let enriched = (
            DecodingOutcome { try AppStoreJSON.decode(EnrichedRecord.self, from: json) },
            DecodingOutcome { try AppStoreJSON.decodeGenerally(EnrichedRecord.self, from: json) }
        )
        let verified = (
            DecodingOutcome { try AppStoreJSON.decode(VerifiedRecord.self, from: json) },
            DecodingOutcome { try AppStoreJSON.decodeGenerally(VerifiedRecord.self, from: json) }
        )
        return enriched.0 == enriched.1 && verified.0 == verified.1
    }

    static let records = LifecycleGenerator(seed: 2026).stream(customers: 60)

    @Test("generated records take the direct path and read as the general path reads them")
    func directPathIsTaken() throws {
        #expect(Self.records.count > 300)
        var misses: [String] = []
        for record in Self.records {
            let enriched = try record.encoded()
            let verified = try record.verified.encoded()
            let general = try AppStoreJSON.decodeGenerally(EnrichedRecord.self, from: enriched)
            let generalVerified = try AppStoreJSON.decodeGenerally(VerifiedRecord.self, from: verified)
            if EnrichedRecord.decodeDirectly(from: enriched) != general || VerifiedRecord.decodeDirectly(from: verified) != generalVerified {
                misses.append(String(decoding: enriched, as: UTF8.self))
            }
        }
        #expect(misses.isEmpty, "\(misses.count) records: \(misses.first?.prefix(400) ?? "")")
        #expect(Set(Self.records.map(\.enrichment.lookup)).isSuperset(of: [.history, .transactionOnly]))
    }

    @Test("an enriched body around the verified record's published bytes is the record's own encoding")
    func enrichedAroundVerifiedBytes() throws {
        for record in Self.records {
            let verified = try record.verified.encoded()
            #expect(try EnrichedRecord.encoded(verifiedBody: verified, enrichment: record.enrichment) == record.encoded())
            // Bytes as another writer laid them out (spaces, a newline) are kept, and read the same.
            let spaced = Array(" \n".utf8) + verified + Array(" ".utf8)
            let body = try EnrichedRecord.encoded(verifiedBody: spaced, enrichment: record.enrichment)
            #expect(try EnrichedRecord.decode(body) == EnrichedRecord.decode(record.encoded()))
        }
    }

    @Test("20,000 mutations of generated records decode alike directly and generally")
    func mutations() throws {
        let originals = try Self.records.prefix(200).flatMap { [try $0.encoded(), try $0.verified.encoded()] }
        var random = SeededGenerator(seed: 17)
        var disagreements: [String] = []
        for round in 0..<20_000 {
            let bytes = JSONMutation.mutate(originals[round % originals.count], using: &random)
            if !Self.agree(bytes) { disagreements.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(3))")
    }

    @Test(
        "edge cases decode alike directly and generally",
        arguments: [
            ("kind", #""kind":"notification","#, ""), ("kind", #""kind":"notification","#, #""kind":null,"#),
            ("kind", #""kind":"notification","#, #""kind":"upload","#), ("source", #""source":"#, #""source":null,"x":"#),
            ("environment", #""environment":"Production""#, #""environment":"Elsewhere""#),
            ("verifiedAt", #""verifiedAt":"#, #""verifiedAt":"1","x":"#),
            ("lookup", #""lookup":"history""#, #""lookup":"guess""#), ("lookup", #""lookup":"history""#, #""lookup":null"#),
            ("history", #""history":["#, #""history":null,"x":["#), ("history", #""history":["#, #""history":[null,"#),
            ("fetchedAt", #""fetchedAt":"#, #""fetchedAt":null,"x":"#),
            ("appAccountTokenSource", #""appAccountTokenSource":"transaction""#, #""appAccountTokenSource":"guess""#),
            ("status", #""status":"#, #""status":"1","x":"#), ("repeated", #""kind":"#, #""kind":"transaction","kind":"#),
        ])
    func edgeCases(field: String, replacing: String, with replacement: String) throws {
        let candidates = try Self.records.map { String(decoding: try $0.encoded(), as: UTF8.self) }
        let original = try #require(candidates.first { $0.contains(replacing) }, "no record has \(replacing)")
        let changed = original.replacingOccurrences(of: replacing, with: replacement)
        #expect(changed != original)
        #expect(Self.agree(Array(changed.utf8)), "\(field): \(changed.prefix(300))")
    }
}
