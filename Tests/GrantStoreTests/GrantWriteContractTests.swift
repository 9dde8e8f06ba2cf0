import AppStore
import Foundation
import GrantTestSupport
import GrantWorkload
import JSONCoding
import PipelineRecords
import PostgresNIO
import Testing

@testable import EntitlementStore

/// grant_write's typed parameters and what it publishes: the Swift side and the SQL side name each
/// column once, and nothing but a test holds them together.
@Suite("grant_write's contract", .enabled(if: ScratchDatabase.enabled), .timeLimit(.minutes(15)))
struct GrantWriteContractTests {
    @Test("the columns grant binds are the typed grant_write's parameters, by name, type and order")
    func parametersMatchTheSignature() async throws {
        try await ScratchDatabase.with { db in
            let rows = try await db.client.query(
                """
                SELECT unnest(p.proargnames), unnest(p.proargtypes::regtype[]::text[])
                FROM pg_proc p WHERE p.proname = 'grant_write' AND p.pronargs > 1
                """, logger: ScratchDatabase.logger)
            var signature: [String] = []
            for try await (name, type) in rows.decode((String, String).self) { signature.append("\(name) \(type)") }
            #expect(signature == GrantWriteColumns.parameters.map { "\($0.name) \($0.type)" })
        }
    }

    @Test("each published change event is the project's encoding of itself, numbered as its outbox row, gap-free per customer")
    func outboxHoldsTheEncodersBytes() async throws {
        try await ScratchDatabase.with { db in
            try await applyAll(LifecycleGenerator(seed: 23).stream(customers: 40), db.store, policy: generatorPolicy)
            let rows = try await db.client.query(
                "SELECT customer_id, seq, body FROM outbox ORDER BY environment, customer_id, seq", logger: ScratchDatabase.logger)
            var count = 0
            var last: [UUID: Int64] = [:]
            for try await (customer, seq, body) in rows.decode((UUID, Int64, String).self) {
                count += 1
                let event = try AppStoreJSON.decode(ChangeEvent.self, from: Array(body.utf8))
                #expect(event.seq == seq && event.customerId == customer && event.schema == ChangeEvent.schemaName)
                #expect(try StreamingJSONEncoder.encodeToString(event) == body, "not the encoder's bytes: \(body)")
                #expect(seq == (last[customer] ?? 0) + 1, "customer \(customer) skipped from \(last[customer] ?? 0) to \(seq)")
                last[customer] = seq
            }
            #expect(count > 40)
        }
    }

    @Test("a millisecond of Apple's is stored as that millisecond, however its Date was made")
    func momentsKeepTheirMilliseconds() {
        let epoch: Int64 = 946_684_800_000  // Postgres's, in ms since 1970
        var truncatedWrong = 0
        for ms in stride(from: Int64(1_767_245_962_000), to: 1_767_245_963_000, by: 1) {
            for date in [
                Date(timeIntervalSince1970: Double(ms) / 1000),
                Date(timeIntervalSince1970: Double(ms / 1000)).addingTimeInterval(Double(ms % 1000) / 1000),
            ] {
                #expect(PostgresMicroseconds(date).microseconds == (ms - epoch) * 1000, "\(ms) ms")
                if Int64(date.timeIntervalSince(Date(timeIntervalSince1970: 946_684_800)) * 1_000_000) != (ms - epoch) * 1000 { truncatedWrong += 1 }
            }
        }
        // Truncating, as postgres-nio's Date encoding does, gets some of them a microsecond early.
        #expect(truncatedWrong > 0)
    }
}
