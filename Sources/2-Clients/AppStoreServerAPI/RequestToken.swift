import AppStore
import Crypto
import Foundation
import JSONCoding

/// The bearer token of one App Store Server API request: a compact JWS, ES256, signed with the
/// App Store Connect key.
///
/// Header `{"alg":"ES256","kid":<key ID>,"typ":"JWT"}`; claims `iss`, `iat`, `exp` (seconds),
/// `aud` = `appstoreconnect-v1`, `bid`. Apple rejects tokens whose `exp` is more than 60 minutes
/// after `iat`. Apple's page says to generate a new token for each request, and its libraries sign
/// one per request valid for 5 minutes; this client does the same.
public enum RequestToken {
    /// The audience Apple requires.
    public static let audience = "appstoreconnect-v1"
    /// The longest lifetime Apple accepts.
    public static let maximumLifetime: Duration = .seconds(3600)

    /// The claims, as Apple names them.
    public struct Claims: Codable, Hashable, Sendable {
        public var iss: String
        public var iat: Int64
        public var exp: Int64
        public var aud: String
        public var bid: String
        public init(iss: String, iat: Int64, exp: Int64, aud: String, bid: String) {
            self.iss = iss
            self.iat = iat
            self.exp = exp
            self.aud = aud
            self.bid = bid
        }
    }

    /// The header, as Apple names it.
    public struct Header: Codable, Hashable, Sendable {
        public var alg: String
        public var kid: String
        public var typ: String
        public init(alg: String = "ES256", kid: String, typ: String = "JWT") {
            self.alg = alg
            self.kid = kid
            self.typ = typ
        }
    }

    /// Signs a token for `credentials`, issued at `now`, valid for `lifetime` (capped at 60 minutes).
    public static func make(
        credentials: AppStoreAPICredentials, now: Date = Date(), lifetime: Duration = .seconds(300)
    ) throws(AppStoreAPIError) -> String {
        let seconds = min(lifetime, maximumLifetime).components.seconds
        let iat = Int64(now.timeIntervalSince1970)
        let claims = Claims(iss: credentials.issuerID, iat: iat, exp: iat + seconds, aud: audience, bid: credentials.bundleId)
        return try sign(header: Header(kid: credentials.keyID), claims: claims, key: credentials.privateKey)
    }

    /// Signs any header and claims (tests use it to build the tokens Apple must refuse).
    public static func sign(header: Header, claims: Claims, key: P256.Signing.PrivateKey) throws(AppStoreAPIError) -> String {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let input = Base64.encodeURL(try encoder.encode(header)) + "." + Base64.encodeURL(try encoder.encode(claims))
            let signature = try key.signature(for: Data(input.utf8))
            return input + "." + Base64.encodeURL(signature.rawRepresentation)
        } catch {
            throw AppStoreAPIError(.invalidCredentials, "the request token could not be signed")
        }
    }
}
