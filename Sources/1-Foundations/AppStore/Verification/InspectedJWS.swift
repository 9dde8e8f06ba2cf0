import Foundation
import JSONCoding
import SwiftASN1
import X509

/// What a compact JWS claims, decoded without any verification.
///
/// For operators and the `inspect` CLI: it shows why a token fails (which chain, which dates, which
/// app) next to the verifier's verdict. Nothing in it is trustworthy on its own.
public struct InspectedJWS: Sendable {
    /// The header's `alg`.
    public var algorithm: String?
    /// The `x5c` certificates that parsed, in header order (`nil` for an entry that did not parse).
    public var certificates: [Certificate?]
    /// The payload as JSON.
    public var payload: JSONValue
    /// The kind the payload's keys suggest.
    public var kind: SignedDataKind?

    /// Decodes a compact JWS without verifying anything.
    /// - Throws: ``AppStoreVerificationError`` `malformed` when it is not a compact JWS with JSON
    ///   header and payload.
    public init(_ token: String, maximumSize: Int = 1 << 20) throws(AppStoreVerificationError) {
        let jws = try CompactJWS(token, maximumSize: maximumSize)
        let headerBytes = try jws.decodedHeader()
        let payloadBytes = try jws.decodedPayload()
        let header: [String: JSONValue]
        let payload: JSONValue
        do {
            header = try AppStoreJSON.decoder.decode([String: JSONValue].self, from: Data(headerBytes))
            payload = try AppStoreJSON.decoder.decode(JSONValue.self, from: Data(payloadBytes))
        } catch {
            throw AppStoreVerificationError(.malformed, "header or payload is not JSON")
        }
        if case .string(let alg) = header["alg"] {
            algorithm = alg
        }
        certificates = []
        if case .array(let entries) = header["x5c"] {
            certificates = entries.map { entry in
                guard case .string(let text) = entry, let der = Base64.decodeStandard(text) else { return nil }
                return try? Certificate(derEncoded: der)
            }
        }
        self.payload = payload
        if case .object(let object) = payload {
            kind = SignedDataKind.detect(keys: Set(object.keys))
        }
    }
}
