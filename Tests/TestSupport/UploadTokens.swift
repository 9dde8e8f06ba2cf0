import Crypto
import Foundation
import JWTKit
import _CryptoExtras

/// An app's identity provider in a test: it signs upload tokens (RS256 or ES256) under a key ID
/// and publishes its public key for a JWKS. Ingest checks such tokens on `POST /v1/transactions`
/// when `INGEST_UPLOAD_AUTH=jwt`.
public struct UploadTokenSigner: Sendable {
    public enum Algorithm: String, Sendable {
        case rs256 = "RS256"
        case es256 = "ES256"
    }

    public let kid: String
    public let algorithm: Algorithm
    /// This key's public JWK, as a JWKS lists it.
    public let publicJWK: [String: String]
    private let keys: JWTKeyCollection

    /// A fresh P-256 key.
    public static func es256(kid: String = "es-\(UUID().uuidString.prefix(8))") async -> UploadTokenSigner {
        let key = ES256PrivateKey()
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
        let point = key.publicKey.parameters!
        return UploadTokenSigner(
            kid: kid, algorithm: .es256,
            publicJWK: ["kty": "EC", "crv": "P-256", "x": point.x, "y": point.y, "kid": kid, "alg": "ES256", "use": "sig"],
            keys: keys)
    }

    /// A fresh 2048-bit RSA key.
    public static func rs256(kid: String = "rs-\(UUID().uuidString.prefix(8))") async throws -> UploadTokenSigner {
        let key = try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let keys = JWTKeyCollection()
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        let primitives = try key.publicKey.getKeyPrimitives()
        return UploadTokenSigner(
            kid: kid, algorithm: .rs256,
            publicJWK: [
                "kty": "RSA", "n": UploadTokens.base64URL(primitives.modulus), "e": UploadTokens.base64URL(primitives.publicExponent),
                "kid": kid, "alg": "RS256", "use": "sig",
            ],
            keys: keys)
    }

    /// A token carrying `claims`, signed with this key, its header naming `kid` (or this key's).
    public func token(_ claims: UploadClaims, kid: String? = nil) async throws -> String {
        var header = JWTHeader()
        header.typ = "JWT"
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid ?? self.kid), header: header)
    }
}

/// The claims of a test upload token; nil leaves a claim out.
public struct UploadClaims: JWTPayload {
    public var issuer: String?
    /// One audience is written as a string, several as an array.
    public var audience: [String]?
    public var subject: String?
    public var expires: Date?
    public var notBefore: Date?
    public var issuedAt: Date?
    /// Further string claims (e.g. a custom user claim).
    public var extra: [String: String]

    /// A token valid for ten minutes from now.
    public init(
        issuer: String?, audience: [String]?, subject: String?, expires: Date? = Date().addingTimeInterval(600),
        notBefore: Date? = nil, issuedAt: Date? = Date(), extra: [String: String] = [:]
    ) {
        self.issuer = issuer
        self.audience = audience
        self.subject = subject
        self.expires = expires
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.extra = extra
    }

    private struct Name: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Name.self)
        issuer = try c.decodeIfPresent(String.self, forKey: Name(stringValue: "iss"))
        if let one = try? c.decode(String.self, forKey: Name(stringValue: "aud")) {
            audience = [one]
        } else {
            audience = try c.decodeIfPresent([String].self, forKey: Name(stringValue: "aud"))
        }
        subject = try c.decodeIfPresent(String.self, forKey: Name(stringValue: "sub"))
        expires = try c.decodeIfPresent(Double.self, forKey: Name(stringValue: "exp")).map(Date.init(timeIntervalSince1970:))
        notBefore = try c.decodeIfPresent(Double.self, forKey: Name(stringValue: "nbf")).map(Date.init(timeIntervalSince1970:))
        issuedAt = try c.decodeIfPresent(Double.self, forKey: Name(stringValue: "iat")).map(Date.init(timeIntervalSince1970:))
        var extra: [String: String] = [:]
        for key in c.allKeys where !["iss", "aud", "sub", "exp", "nbf", "iat"].contains(key.stringValue) {
            if let value = try? c.decode(String.self, forKey: key) { extra[key.stringValue] = value }
        }
        self.extra = extra
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Name.self)
        try c.encodeIfPresent(issuer, forKey: Name(stringValue: "iss"))
        if let audience {
            if audience.count == 1 {
                try c.encode(audience[0], forKey: Name(stringValue: "aud"))
            } else {
                try c.encode(audience, forKey: Name(stringValue: "aud"))
            }
        }
        try c.encodeIfPresent(subject, forKey: Name(stringValue: "sub"))
        try c.encodeIfPresent(expires.map { Int($0.timeIntervalSince1970) }, forKey: Name(stringValue: "exp"))
        try c.encodeIfPresent(notBefore.map { Int($0.timeIntervalSince1970) }, forKey: Name(stringValue: "nbf"))
        try c.encodeIfPresent(issuedAt.map { Int($0.timeIntervalSince1970) }, forKey: Name(stringValue: "iat"))
        for (name, value) in extra { try c.encode(value, forKey: Name(stringValue: name)) }
    }

    /// Tests mint tokens that must fail ingest's checks, so jwt-kit's signing side checks nothing.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Key sets and HMAC signatures for upload tests.
public enum UploadTokens {
    /// A JWKS document publishing the signers' public keys.
    public static func jwks(_ signers: [UploadTokenSigner]) -> String {
        let data = try! JSONSerialization.data(withJSONObject: ["keys": signers.map(\.publicJWK)], options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes ``jwks(_:)`` to a fresh temporary file and returns its path.
    public static func jwksFile(_ signers: [UploadTokenSigner]) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString.prefix(8)).json")
        try Data(jwks(signers).utf8).write(to: url)
        return url.path
    }

    /// `v1=<lowercase hex HMAC-SHA256(secret, "<timestamp>.<body>")>`, as a backend signs an upload.
    public static func hmacSignature(secret: [UInt8], timestamp: Int, body: [UInt8]) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(timestamp).".utf8) + body, using: SymmetricKey(data: secret))
        return "v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    /// The headers of an HMAC-signed upload: `X-Upload-Timestamp` and `X-Upload-Signature`.
    public static func hmacHeaders(
        secret: [UInt8], body: [UInt8], timestamp: Int = Int(Date().timeIntervalSince1970)
    ) -> [(name: String, value: String)] {
        [("X-Upload-Timestamp", "\(timestamp)"), ("X-Upload-Signature", hmacSignature(secret: secret, timestamp: timestamp, body: body))]
    }

    /// A compact JWT with the header given and a signature of junk: for algorithms ingest must
    /// refuse before looking for a key (`none`, `HS256`).
    public static func unsignedToken(header: [String: String], claims: UploadClaims) throws -> String {
        let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let claimsJSON = try JSONEncoder().encode(claims)
        return "\(base64URL(headerJSON)).\(base64URL(claimsJSON)).\(base64URL(Data("not a signature".utf8)))"
    }

    /// Unpadded base64url, as JWS segments are written.
    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
