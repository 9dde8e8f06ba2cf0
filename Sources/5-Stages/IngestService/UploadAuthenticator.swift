import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import JWTKit
import Logging
import PipelineRecords

/// What an upload's credential established.
struct UploadCredential: Sendable, Equatable {
    let mode: UploadAuthMode
    /// The user a token names (jwt); nil when the body's `userId` stands (hmac vouches for it,
    /// none takes it as a claim).
    let tokenUser: String?
}

/// Checks the credential of `POST /v1/transactions` before anything is stored: a bearer JWT
/// against the identity provider's keys, or a backend's HMAC over the body, or nothing when
/// uploads are open. Every refusal is a 401 with a stable `auth.*` code and a challenge; no
/// message repeats the token or the secret.
public final class UploadAuthenticator: Sendable {
    public let settings: UploadAuthSettings
    private let keys: UploadKeyStore?
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - httpClient: fetches an https JWKS; the executable passes a client that follows no
    ///     redirects, so the keys cannot be served from anywhere but the configured URL.
    ///   - now: the clock for `exp`, `nbf` and the HMAC window (tests move it).
    public init(
        settings: UploadAuthSettings, httpClient: HTTPClient = .shared, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.settings = settings
        if case .jwt(let jwt) = settings {
            keys = UploadKeyStore(settings: jwt, httpClient: httpClient, logger: logger)
        } else {
            keys = nil
        }
        self.now = now
    }

    /// Loads the identity provider's keys once (jwt), so a wrong URL shows in the log at start.
    /// A failure is logged and retried on demand: Apple's webhook is served either way.
    public func prepare() async {
        await keys?.prepare()
    }

    func authenticate(headers: HTTPFields, body: [UInt8]) async throws(IngestError) -> UploadCredential {
        switch settings {
        case .jwt(let jwt):
            guard let keys else { preconditionFailure("a jwt authenticator has a key store") }
            return UploadCredential(mode: .jwt, tokenUser: try await verifyToken(headers, settings: jwt, keys: keys))
        case .hmac(let hmac):
            try verifySignature(headers, body: body, settings: hmac)
            return UploadCredential(mode: .hmac, tokenUser: nil)
        case .open:
            return UploadCredential(mode: .none, tokenUser: nil)
        }
    }

    // MARK: - jwt

    static let bearerChallenge = #"Bearer realm="appstore-ingest""#

    private static func tokenRefused(_ code: IngestError.Code, _ message: String) -> IngestError {
        IngestError(.unauthorized, code, message, challenge: #"\#(bearerChallenge), error="invalid_token""#)
    }

    /// The user the token names, once its signature, issuer, audience and times hold.
    private func verifyToken(_ headers: HTTPFields, settings: JWTUploadSettings, keys: UploadKeyStore) async throws(IngestError) -> String {
        let token = try Self.bearerToken(headers)
        let header: JWTHeader
        do {
            header = try DefaultJWTParser().parse(Array(token.utf8), as: UploadTokenClaims.self).header
        } catch {
            throw Self.tokenRefused(.malformedToken, "the bearer token is not a compact JWT")
        }
        guard header.fields["crit"] == nil else {
            throw Self.tokenRefused(.malformedToken, "the token has critical header extensions, which are not supported")
        }
        guard let alg = header.alg, let algorithm = UploadKeyStore.Algorithm(rawValue: alg) else {
            throw Self.tokenRefused(.unsupportedAlgorithm, "the token is not signed with RS256 or ES256")
        }
        let key: UploadKeyStore.Key
        switch await keys.lookup(kid: header.kid, algorithm: algorithm) {
        case .found(let found):
            key = found
        case .unknown:
            throw Self.tokenRefused(
                .unknownKey,
                header.kid == nil
                    ? "the token names no key (kid) and the identity provider has more than one"
                    : "the token is signed by a key the identity provider does not publish")
        case .unavailable:
            throw IngestError(.serviceUnavailable, .keysUnavailable, "the identity provider's keys could not be loaded; retry later")
        }
        guard key.algorithm == algorithm else {
            throw Self.tokenRefused(.unsupportedAlgorithm, "the token's algorithm \(algorithm.rawValue) does not match its key")
        }
        let claims: UploadTokenClaims
        do {
            claims = try await key.collection.verify(token, as: UploadTokenClaims.self)
        } catch let error as JWTError where error.errorType == .malformedToken {
            throw Self.tokenRefused(.malformedToken, "the token's claims are not a JSON object of the expected types")
        } catch {
            throw Self.tokenRefused(.badSignature, "the token's signature does not verify")
        }
        return try check(claims, settings: settings)
    }

    private func check(_ claims: UploadTokenClaims, settings: JWTUploadSettings) throws(IngestError) -> String {
        guard claims.issuer == settings.issuer else {
            throw Self.tokenRefused(.wrongIssuer, "the token was not issued by the configured identity provider")
        }
        guard claims.audience.contains(settings.audience) else {
            throw Self.tokenRefused(.wrongAudience, "the token is not meant for this service (aud)")
        }
        let now = self.now().timeIntervalSince1970
        let leeway = Double(settings.leeway.components.seconds)
        guard let expires = claims.expires else {
            throw Self.tokenRefused(.missingExpiry, "the token has no expiry (exp)")
        }
        guard now <= expires + leeway else {
            throw Self.tokenRefused(.tokenExpired, "the token has expired")
        }
        if let notBefore = claims.notBefore, now + leeway < notBefore {
            throw Self.tokenRefused(.tokenNotYetValid, "the token is not valid yet (nbf)")
        }
        guard let user = claims.strings[settings.userClaim], AppUploadHints.isValidUserId(user) else {
            throw Self.tokenRefused(
                .missingUserClaim,
                "the token's claim \(settings.userClaim) is not a non-empty string of at most \(AppUploadHints.maximumUserIdBytes) bytes without control characters"
            )
        }
        return user
    }

    private static func bearerToken(_ headers: HTTPFields) throws(IngestError) -> String {
        guard let value = headers[.authorization] else {
            throw IngestError(.unauthorized, .missingCredentials, "an upload needs an Authorization: Bearer token", challenge: bearerChallenge)
        }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw IngestError(.unauthorized, .missingCredentials, "the Authorization header is not a Bearer token", challenge: bearerChallenge)
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, token.utf8.count <= 16 << 10 else {
            throw tokenRefused(.malformedToken, "the bearer token is empty or larger than 16 KiB")
        }
        return token
    }

    // MARK: - hmac

    static let hmacChallenge = #"HMAC-SHA256 realm="appstore-ingest", headers="X-Upload-Timestamp X-Upload-Signature""#

    private static func signatureRefused(_ code: IngestError.Code, _ message: String) -> IngestError {
        IngestError(.unauthorized, code, message, challenge: hmacChallenge)
    }

    /// `X-Upload-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`, compared in
    /// constant time, then `X-Upload-Timestamp` within the window: a stale timestamp with a good
    /// signature is a replay.
    private func verifySignature(_ headers: HTTPFields, body: [UInt8], settings: HMACUploadSettings) throws(IngestError) {
        guard let timestamp = headers[.uploadTimestamp], let signature = headers[.uploadSignature] else {
            throw Self.signatureRefused(
                .missingCredentials, "an upload needs the headers X-Upload-Timestamp and X-Upload-Signature")
        }
        guard (1...12).contains(timestamp.utf8.count), timestamp.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let seconds = Int64(timestamp)
        else {
            throw Self.signatureRefused(.invalidTimestamp, "X-Upload-Timestamp is not a UNIX time in seconds")
        }
        guard signature.hasPrefix("v1="), let mac = Self.hexBytes(signature.dropFirst(3)), mac.count == SHA256.byteCount else {
            throw Self.signatureRefused(.badHMAC, "X-Upload-Signature is not v1=<64 lowercase hex digits>")
        }
        var signed = Array(timestamp.utf8)
        signed.append(UInt8(ascii: "."))
        signed.append(contentsOf: body)
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: signed, using: settings.secret.key) else {
            throw Self.signatureRefused(.badHMAC, "X-Upload-Signature does not match the body and timestamp")
        }
        let skew = abs(now().timeIntervalSince1970 - Double(seconds))
        guard skew <= Double(settings.window.components.seconds) else {
            throw Self.signatureRefused(
                .staleTimestamp, "X-Upload-Timestamp is more than \(settings.window.components.seconds) s from now")
        }
    }

    /// Lowercase hex only, as signers are told to send.
    static func hexBytes(_ text: Substring) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ d: UInt8) -> UInt8? {
            switch d {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}

/// The claims ingest reads from an upload token: `iss`, `aud` (a string or an array), `exp`,
/// `nbf`, and every string claim, one of which names the user.
struct UploadTokenClaims: JWTPayload {
    var issuer: String?
    var audience: [String]
    var expires: Double?
    var notBefore: Double?
    var strings: [String: String]

    private struct Name: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Name.self)
        let aud = Name(stringValue: "aud")
        if let one = try? container.decode(String.self, forKey: aud) {
            audience = [one]
        } else {
            audience = try container.decodeIfPresent([String].self, forKey: aud) ?? []
        }
        expires = try container.decodeIfPresent(Double.self, forKey: Name(stringValue: "exp"))
        notBefore = try container.decodeIfPresent(Double.self, forKey: Name(stringValue: "nbf"))
        var strings: [String: String] = [:]
        for key in container.allKeys {
            if let value = try? container.decode(String.self, forKey: key) { strings[key.stringValue] = value }
        }
        self.strings = strings
        issuer = strings["iss"]
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Name.self)
        for (name, value) in strings { try container.encode(value, forKey: Name(stringValue: name)) }
        try container.encode(audience, forKey: Name(stringValue: "aud"))
        try container.encodeIfPresent(expires, forKey: Name(stringValue: "exp"))
        try container.encodeIfPresent(notBefore, forKey: Name(stringValue: "nbf"))
    }

    /// jwt-kit's own claim hook: ingest checks the claims itself after the signature, against
    /// its configuration and with one error code per claim, so there is nothing to do here.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension HTTPField.Name {
    static let uploadTimestamp = Self("X-Upload-Timestamp")!
    static let uploadSignature = Self("X-Upload-Signature")!
}
