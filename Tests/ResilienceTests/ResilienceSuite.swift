import Foundation
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
