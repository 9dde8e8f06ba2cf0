import Foundation

/// The app identity a token claims about itself, read without verification: only to fill in what
/// the operator did not say, never to decide trust.
struct TokenClaims {
    var bundleId: String?
    var appAppleId: Int64?
    var environment: AppStoreEnvironment?

    /// Reads the claims of a payload of `kind`; empty when the payload does not decode as that kind.
    init(kind: SignedDataKind, payload: JSONValue) {
        guard let data = try? AppStoreJSON.encoder.encode(payload) else { return }
        let decoder = AppStoreJSON.decoder
        switch kind {
        case .notification:
            guard let p = try? decoder.decode(ResponseBodyV2DecodedPayload.self, from: data) else { return }
            // Apple's order: data, summary, externalPurchaseToken, appData.
            if let d = p.data {
                (bundleId, appAppleId, environment) = (d.bundleId, d.appAppleId, d.environment)
            } else if let s = p.summary {
                (bundleId, appAppleId, environment) = (s.bundleId, s.appAppleId, s.environment)
            } else if let t = p.externalPurchaseToken {
                (bundleId, appAppleId, environment) = (t.bundleId, t.appAppleId, t.derivedEnvironment)
            } else if let a = p.appData {
                (bundleId, appAppleId, environment) = (a.bundleId, a.appAppleId, a.environment)
            }
        case .transaction:
            guard let p = try? decoder.decode(JWSTransactionDecodedPayload.self, from: data) else { return }
            (bundleId, environment) = (p.bundleId, p.environment)
        case .renewalInfo:
            guard let p = try? decoder.decode(JWSRenewalInfoDecodedPayload.self, from: data) else { return }
            environment = p.environment
        case .appTransaction:
            guard let p = try? decoder.decode(AppTransaction.self, from: data) else { return }
            (bundleId, appAppleId, environment) = (p.bundleId, p.appAppleId, p.receiptType)
        }
    }
}
