import EntitlementStore
import Foundation
import GrantDecision
import GrantTestSupport
import PipelineRecords
import TestSupport
import Testing

/// The resilience tests stop the shared broker and kill processes, so they must not run beside
/// the others, nor beside each other. The README's test command runs them in a second `swift test`
/// invocation with `RUN_RESILIENCE_TESTS=1` (CI always does); the suites below are nested in this
/// one, which runs them one at a time.
@Suite("Resilience", .serialized, .enabled(if: resilienceTestsEnabled))
struct Resilience {}

let resilienceTestsEnabled = ProcessInfo.processInfo.environment["RUN_RESILIENCE_TESTS"] == "1"

/// Reads the `loadgenId` numbers out of stored bodies (`{"signedPayload":"h.<payload>.s"}`).
func loadgenIDs(_ bodies: [[UInt8]]) -> [Int] {
    bodies.compactMap { body -> Int? in
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let jws = (object["signedPayload"] ?? object["signedTransaction"]) as? String
        else { return nil }
        let parts = jws.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var b64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64),
            let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return payload["loadgenId"] as? Int
    }
}

/// Polls `condition` every 200 ms until it holds; throws after `timeout` (a guard against a hang,
/// not a measurement).
func waitUntil(timeout: Duration, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(200))
    }
    throw TestSupportError("condition not met within \(timeout)")
}

/// The truth for a grant run: `records` applied in batches of 250 straight to a scratch database that
/// nothing disturbs; the dump of `tables` afterwards.
func groundTruth(
    _ records: [EnrichedRecord], policy: GrantPolicy, tables: [[(table: String, columns: String)]]
) async throws -> [[String: String]] {
    try await ScratchDatabase.with { db in
        for start in stride(from: 0, to: records.count, by: 250) {
            let events = try records[start..<min(start + 250, records.count)].map { try GrantEvent($0) }
            for r in try await db.store.apply(events, policy: policy) { _ = try r.get() }
        }
        var dumps: [[String: String]] = []
        for t in tables { dumps.append(try await db.dump(t)) }
        return dumps
    }
}
