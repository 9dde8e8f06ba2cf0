import AppStore
import AppStoreSigning
import Crypto
import Foundation
import JSONCoding
import X509

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Measures SignedDataVerifier.verifyNotification on one thread: notifications that each carry a
// nested transaction and renewal info (three JWS), signed by a test CA built in memory; first with
// a warm chain cache, then with the cache off (every JWS validates its chain from scratch).
//
// Usage: verify-bench [--count N] [--cold-count N] [--rounds N]
// Each figure is the best of --rounds passes over the same notifications (the machine may be shared).
// Prints a human summary, then as its last line one JSON object with the figures.

struct Arguments {
    var count = 5_000
    var coldCount = 1_000
    var rounds = 3

    init(_ arguments: [String]) {
        var rest = arguments.makeIterator()
        while let argument = rest.next() {
            switch argument {
            case "--count": count = rest.next().flatMap(Int.init) ?? count
            case "--cold-count": coldCount = rest.next().flatMap(Int.init) ?? coldCount
            case "--rounds": rounds = rest.next().flatMap(Int.init) ?? rounds
            default:
                FileHandle.standardError.write(Data("usage: verify-bench [--count N] [--cold-count N] [--rounds N]\n".utf8))
                exit(2)
            }
        }
        count = max(1, count)
        coldCount = max(1, coldCount)
        rounds = max(1, rounds)
    }
}

let arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
let bundleId = "com.example.entitlements"
let appAppleId: Int64 = 1_234_567_890

func notification(_ index: Int, signer: JWSSigner, signedDate: Date) throws -> String {
    let originalID = String(2_000_000_000_000_000 + index)
    let transaction = JWSTransactionDecodedPayload(
        originalTransactionId: originalID, transactionId: String(3_000_000_000_000_000 + index),
        webOrderLineItemId: String(4_000_000_000_000_000 + index), bundleId: bundleId,
        productId: "com.example.premium.monthly", subscriptionGroupIdentifier: "21000000",
        purchaseDate: signedDate.addingTimeInterval(-60), originalPurchaseDate: signedDate.addingTimeInterval(-86_400),
        expiresDate: signedDate.addingTimeInterval(30 * 86_400), quantity: 1, type: .autoRenewableSubscription,
        appAccountToken: UUID(), inAppOwnershipType: .purchased, signedDate: signedDate, environment: .sandbox,
        storefront: "USA", storefrontId: "143441", transactionReason: .renewal, currency: "USD", price: 9990,
        appTransactionId: "704000000000000001")
    let renewal = JWSRenewalInfoDecodedPayload(
        originalTransactionId: originalID, autoRenewProductId: "com.example.premium.monthly",
        productId: "com.example.premium.monthly", autoRenewStatus: .on, isInBillingRetryPeriod: false,
        signedDate: signedDate, environment: .sandbox, recentSubscriptionStartDate: signedDate.addingTimeInterval(-86_400),
        renewalDate: signedDate.addingTimeInterval(30 * 86_400), currency: "USD", renewalPrice: 9990)
    let payload = ResponseBodyV2DecodedPayload(
        notificationType: .didRenew, notificationUUID: UUID().uuidString.lowercased(),
        data: NotificationData(
            environment: .sandbox, appAppleId: appAppleId, bundleId: bundleId, bundleVersion: "42",
            signedTransactionInfo: try signer.sign(transaction), signedRenewalInfo: try signer.sign(renewal),
            status: .active),
        version: "2.0", signedDate: signedDate)
    return try signer.sign(payload)
}

func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

/// CPU seconds this process has used (all threads): unlike wall time, not inflated when the
/// pinned core is shared with other work.
func processCPUSeconds() -> Double {
    Double(clock()) / 1_000_000  // POSIX (XSI): CLOCKS_PER_SEC is one million
}

/// Notifications per wall-clock second and per CPU second.
struct Rate {
    var wall = 0.0
    var cpu = 0.0
    mutating func keepBest(_ other: Rate) {
        wall = max(wall, other.wall)
        cpu = max(cpu, other.cpu)
    }
}

/// Verifies every token once, in order, on this task.
func measure(_ verifier: SignedDataVerifier, _ tokens: ArraySlice<String>) async throws -> Rate {
    let clock = ContinuousClock()
    var checked = 0
    let cpuStart = processCPUSeconds()
    let elapsed = try await clock.measure {
        for token in tokens {
            let verified = try await verifier.verifyNotification(signedPayload: token)
            if verified.transaction != nil, verified.renewalInfo != nil { checked += 1 }
        }
    }
    let cpu = processCPUSeconds() - cpuStart
    guard checked == tokens.count else {
        throw AppStoreVerificationError(.malformed, "only \(checked) of \(tokens.count) notifications decoded fully")
    }
    return Rate(wall: Double(tokens.count) / (microseconds(elapsed) / 1e6), cpu: Double(tokens.count) / cpu)
}

do {
    let authority = try SigningAuthority()
    let signer = try authority.makeSigner()
    let total = max(arguments.count, arguments.coldCount) + 100
    let now = AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: Date()))
    var tokens: [String] = []
    tokens.reserveCapacity(total)
    for index in 0..<total { tokens.append(try notification(index, signer: signer, signedDate: now)) }

    let app = try AppStoreApp(bundleId: bundleId, appAppleId: appAppleId, environments: [.sandbox])
    func verifier(_ cache: ChainCachePolicy) throws -> SignedDataVerifier {
        try SignedDataVerifier(configuration: .init(apps: [app], additionalTrustedRoots: [authority.root], chainCache: cache))
    }

    // The floor: one ES256 check (SHA-256 of the signing input plus ECDSA P-256) of a typical JWS.
    let sample = Array(tokens[0].utf8)
    let lastDot = sample.lastIndex(of: UInt8(ascii: "."))!
    let signingInput = Data(sample[..<lastDot])
    let signature = try P256.Signing.ECDSASignature(rawRepresentation: signer.key.signature(for: signingInput).rawRepresentation)
    let publicKey = signer.key.publicKey
    let ecdsaRounds = 2_000
    var valid = 0
    let ecdsaElapsed = ContinuousClock().measure {
        for _ in 0..<ecdsaRounds where publicKey.isValidSignature(signature, for: signingInput) { valid += 1 }
    }
    precondition(valid == ecdsaRounds)
    let ecdsaMicroseconds = microseconds(ecdsaElapsed) / Double(ecdsaRounds)
    // The ECDSA part alone, on a precomputed digest: the floor no JWS code can go below.
    let digest = SHA256.hash(data: signingInput)
    var validDigest = 0
    let digestElapsed = ContinuousClock().measure {
        for _ in 0..<ecdsaRounds where publicKey.isValidSignature(signature, for: digest) { validDigest += 1 }
    }
    precondition(validDigest == ecdsaRounds)
    let ecdsaDigestMicroseconds = microseconds(digestElapsed) / Double(ecdsaRounds)

    // Where the time goes besides ECDSA, per notification (three JWS): base64url decoding of the
    // payloads, SHA-256 of the signing inputs and JSON decoding of the payloads into the models.
    let parts = tokens[0].split(separator: ".").map(String.init)
    let outerPayload = Base64.decodeURL(parts[1])!
    let outer = try AppStoreJSON.decoder.decode(ResponseBodyV2DecodedPayload.self, from: Data(outerPayload))
    let nestedTokens = [outer.data!.signedTransactionInfo!, outer.data!.signedRenewalInfo!]
    let allTokens = [tokens[0]] + nestedTokens
    let breakdownRounds = 2_000
    func perNotification(_ body: () throws -> Void) rethrows -> Double {
        let elapsed = try ContinuousClock().measure { for _ in 0..<breakdownRounds { try body() } }
        return microseconds(elapsed) / Double(breakdownRounds)
    }
    let payloadSegments = allTokens.map { String($0.split(separator: ".")[1]) }
    let base64Microseconds = perNotification { for segment in payloadSegments { _ = Base64.decodeURL(segment) } }
    let signingInputs = allTokens.map { token in Data(token.utf8[..<token.utf8.lastIndex(of: UInt8(ascii: "."))!]) }
    let sha256Microseconds = perNotification { for input in signingInputs { _ = SHA256.hash(data: input) } }
    let payloads = payloadSegments.map { Base64.decodeURL($0)! }
    let jsonMicroseconds = try perNotification {
        _ = try AppStoreJSON.decode(ResponseBodyV2DecodedPayload.self, from: payloads[0])
        _ = try AppStoreJSON.decode(JWSTransactionDecodedPayload.self, from: payloads[1])
        _ = try AppStoreJSON.decode(JWSRenewalInfoDecodedPayload.self, from: payloads[2])
    }
    // The same with Foundation's JSONDecoder, for comparison.
    let payloadData = payloads.map { Data($0) }
    let foundationJSONMicroseconds = try perNotification {
        _ = try AppStoreJSON.decoder.decode(ResponseBodyV2DecodedPayload.self, from: payloadData[0])
        _ = try AppStoreJSON.decoder.decode(JWSTransactionDecodedPayload.self, from: payloadData[1])
        _ = try AppStoreJSON.decoder.decode(JWSRenewalInfoDecodedPayload.self, from: payloadData[2])
    }

    let warmVerifier = try verifier(.default)
    _ = try await measure(warmVerifier, tokens[(total - 100)...])  // warms the cache and the code
    var warm = Rate()
    for _ in 0..<arguments.rounds { warm.keepBest(try await measure(warmVerifier, tokens[0..<arguments.count])) }
    let stats = warmVerifier.cacheStatistics

    let coldVerifier = try verifier(.disabled)
    _ = try await measure(coldVerifier, tokens[(total - 20)...])
    var cold = Rate()
    for _ in 0..<arguments.rounds { cold.keepBest(try await measure(coldVerifier, tokens[0..<arguments.coldCount])) }

    let bytes = tokens[0].utf8.count
    print(
        String(
            format:
                "verify: %.0f notifications/s warm (%.1f µs each; %.0f per CPU-second), %.0f/s with the chain cache off (%.1f µs each; %.0f per CPU-second); 3 JWS per notification, %d-byte signedPayload, cache hits %d, misses %d; one ES256 check of the outer JWS %.1f µs, of which ECDSA P-256 on the digest %.1f µs; per notification: base64url %.1f µs, SHA-256 of the whole signing inputs %.1f µs (warm, only the payloads are hashed), JSON decoding %.1f µs (Foundation's JSONDecoder: %.1f µs)",
            warm.wall, 1e6 / warm.wall, warm.cpu, cold.wall, 1e6 / cold.wall, cold.cpu, bytes, stats.hits, stats.misses,
            ecdsaMicroseconds, ecdsaDigestMicroseconds, base64Microseconds, sha256Microseconds, jsonMicroseconds,
            foundationJSONMicroseconds))
    func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }
    let json: [String: Any] = [
        "scenario": "verify", "notifications_per_s_warm": rounded(warm.wall), "notifications_per_s_cold": rounded(cold.wall),
        "jws_per_notification": 3, "notifications_per_cpu_s_warm": rounded(warm.cpu),
        "notifications_per_cpu_s_cold": rounded(cold.cpu), "notifications_warm": arguments.count,
        "notifications_cold": arguments.coldCount, "rounds": arguments.rounds,
        "us_per_notification_warm": rounded(1e6 / warm.wall), "us_per_notification_cold": rounded(1e6 / cold.wall),
        "es256_check_us": rounded(ecdsaMicroseconds), "ecdsa_p256_verify_us": rounded(ecdsaDigestMicroseconds),
        "signed_payload_bytes": bytes, "base64_us_per_notification": rounded(base64Microseconds),
        "sha256_us_per_notification": rounded(sha256Microseconds), "json_decode_us_per_notification": rounded(jsonMicroseconds),
        "foundation_json_decode_us_per_notification": rounded(foundationJSONMicroseconds),
    ]
    let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
} catch {
    FileHandle.standardError.write(Data("verify-bench failed: \(error)\n".utf8))
    exit(1)
}
