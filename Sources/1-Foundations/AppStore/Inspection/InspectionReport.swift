import Foundation
import X509

/// What `appstorectl inspect` prints for a token that verified: the decoded data (nested JWS
/// verified and decoded too), what it was checked against, and the chain it carried.
public struct InspectionReport: Encodable, Sendable {
    /// The app identity and policy the token was checked against.
    public struct CheckedAgainst: Encodable, Hashable, Sendable {
        public var bundleId: String?
        public var appAppleId: Int64?
        public var environment: String
        public var validationTime: String
        /// Whether Apple's OCSP responders were asked about the leaf and the intermediate.
        public var revocationChecked: Bool
        public var additionalTrustedRoots: [String]
        /// Values taken from the token itself instead of from flags.
        public var assumedFromToken: [String]
    }

    /// One `x5c` certificate as the token carried it.
    public struct CertificateSummary: Encodable, Hashable, Sendable {
        public var subject: String
        public var issuer: String
        public var serialNumber: String
        public var notValidBefore: String
        public var notValidAfter: String

        init(_ certificate: Certificate) {
            let iso = Date.ISO8601FormatStyle()
            subject = String(describing: certificate.subject)
            issuer = String(describing: certificate.issuer)
            serialNumber = certificate.serialNumber.bytes.map { String(format: "%02x", $0) }.joined()
            notValidBefore = iso.format(certificate.notValidBefore)
            notValidAfter = iso.format(certificate.notValidAfter)
        }
    }

    /// Always `valid`: rejected tokens produce an ``InspectFailure`` instead.
    public var verdict = "valid"
    /// What the token is.
    public var kind: SignedDataKind
    /// The JSON field the token was found in, when the input was a body.
    public var inputField: String?
    public var checkedAgainst: CheckedAgainst
    /// The token's `x5c` chain (leaf, intermediate, root as sent; the root used is the configured one).
    public var certificates: [CertificateSummary]
    /// The verified notification with its decoded nested data.
    public var notification: VerifiedNotification?
    public var transaction: JWSTransactionDecodedPayload?
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    public var appTransaction: AppTransaction?

    /// Pretty JSON with sorted keys; dates in milliseconds since 1970, as Apple writes them.
    public func prettyJSON() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            let milliseconds = date.timeIntervalSince1970 * 1000
            if let whole = Int64(exactly: milliseconds.rounded()), abs(milliseconds - milliseconds.rounded()) < 0.001 {
                try container.encode(whole)
            } else {
                try container.encode(milliseconds)
            }
        }
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
