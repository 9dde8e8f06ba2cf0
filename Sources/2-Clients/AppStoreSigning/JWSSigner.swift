import AppStore
import Crypto
import Foundation
import JSONCoding
import SwiftASN1
import X509

/// Produces compact JWS the way Apple signs App Store data: ES256, header `{"alg","x5c"}`,
/// `base64url(header).base64url(payload).base64url(r‖s)`.
///
/// The header is encoded once per signer, so signing in a load generator costs one JSON encoding and
/// one ECDSA signature per payload. Payloads are encoded with ``StreamingJSONEncoder`` (dates in
/// milliseconds, like Apple's; members in declaration order, as Apple's order is no contract either).
public struct JWSSigner: Sendable {
    /// The key that signs (the leaf's).
    public let key: P256.Signing.PrivateKey
    /// The certificates placed in `x5c`, in order.
    public let certificateChain: [Certificate]
    /// The encoded header segment.
    public let headerSegment: String

    /// - Parameters:
    ///   - key: The signing key; normally the key of `certificateChain[0]`.
    ///   - certificateChain: The `x5c` certificates (Apple: leaf, intermediate, root). Any length,
    ///     so tests can build the chains a verifier must reject.
    ///   - algorithm: The `alg` header value; anything but `ES256` only makes sense in negative tests
    ///     (the signature is ES256 regardless).
    public init(key: P256.Signing.PrivateKey, certificateChain: [Certificate], algorithm: String = "ES256") throws {
        self.key = key
        self.certificateChain = certificateChain
        let header = Header(
            alg: algorithm,
            x5c: try certificateChain.map { Base64.encodeStandard(try $0.derBytes()) }
        )
        let headerJSON = try AppStoreJSON.encoder.encode(header)
        self.headerSegment = Base64.encodeURL(headerJSON)
    }

    /// Signs an Encodable payload (a model or any JSON-shaped value).
    public func sign(_ payload: some Encodable) throws -> String {
        try sign(payloadJSON: StreamingJSONEncoder.encode(payload))
    }

    /// Signs payload bytes as they are (tests use this for non-JSON payloads).
    public func sign(payloadJSON: some Collection<UInt8>) throws -> String {
        try Self.sign(headerSegment: headerSegment, payloadSegment: Base64.encodeURL(payloadJSON), key: key)
    }

    /// Signs arbitrary header and payload bytes with `key` (for tests of malformed headers).
    public static func sign(
        headerJSON: some Collection<UInt8>,
        payloadJSON: some Collection<UInt8>,
        key: P256.Signing.PrivateKey
    ) throws -> String {
        try sign(headerSegment: Base64.encodeURL(headerJSON), payloadSegment: Base64.encodeURL(payloadJSON), key: key)
    }

    private static func sign(
        headerSegment: String, payloadSegment: String, key: P256.Signing.PrivateKey
    ) throws
        -> String
    {
        let signingInput = headerSegment + "." + payloadSegment
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64.encodeURL(signature.rawRepresentation)
    }

    private struct Header: Encodable {
        let alg: String
        let x5c: [String]
    }
}

extension Certificate {
    /// The certificate's DER encoding.
    func derBytes() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(self)
        return serializer.serializedBytes
    }
}
