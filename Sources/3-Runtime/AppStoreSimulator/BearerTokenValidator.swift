import AppStore
import AppStoreServerAPI
import Crypto
import Foundation
import JSONCoding

/// Checks a request's bearer token the way Apple does; any failure is a bare 401.
///
/// Header: `alg` ES256, `kid` the simulator's key ID, `typ` JWT when present. Signature: ES256 with
/// the simulator's key. Claims: `iss` the issuer ID, `aud` `appstoreconnect-v1`, `bid` present,
/// `iat` not in the future (60 s leeway), `exp` in the future and at most 60 minutes after `iat`.
struct BearerTokenValidator: Sendable {
    let key: SimulatorAPIKey
    let clock: @Sendable () -> Date

    /// The token's bundle ID, or `nil` when the token must be refused.
    func bundleId(authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return nil }
        let token = authorization.dropFirst("Bearer ".count)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64.decodeURL(parts[0]), let claimsBytes = Base64.decodeURL(parts[1]),
            let signatureBytes = Base64.decodeURL(parts[2]),
            let header = try? JSONDecoder().decode(RequestToken.Header.self, from: Data(headerBytes)),
            let claims = try? JSONDecoder().decode(RequestToken.Claims.self, from: Data(claimsBytes))
        else { return nil }
        guard header.alg == "ES256", header.kid == key.keyID, header.typ == "JWT" else { return nil }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.privateKey.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return nil }
        let now = Int64(clock().timeIntervalSince1970)
        guard claims.iss == key.issuerID, claims.aud == RequestToken.audience, !claims.bid.isEmpty,
            claims.iat <= now + 60, claims.exp > now, claims.exp > claims.iat, claims.exp - claims.iat <= 3600
        else { return nil }
        return claims.bid
    }
}
