import SwiftASN1
import X509

/// Apple's chain rule as a swift-certificates policy: exactly leaf → intermediate → root, with the
/// receipt-signing marker on the leaf and the WWDR marker on the intermediate.
///
/// The markers are what make an Apple-issued certificate an App Store signer; RFC 5280 alone would
/// accept any certificate under Apple's root.
struct AppStoreMarkerPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    mutating func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "App Store chains are leaf, intermediate and root; got \(chain.count)")
        }
        guard chain[0].extensions[oid: AppleMarkerExtensions.receiptSigning] != nil else {
            return .failsToMeetPolicy(reason: "leaf lacks extension \(AppleMarkerExtensions.receiptSigning)")
        }
        guard chain[1].extensions[oid: AppleMarkerExtensions.wwdrIntermediate] != nil else {
            return .failsToMeetPolicy(reason: "intermediate lacks extension \(AppleMarkerExtensions.wwdrIntermediate)")
        }
        return .meetsPolicy
    }
}
