import Crypto
import Foundation
import SwiftASN1
import X509

/// A payload whose JWS signature and chain are verified (identity not yet checked).
struct VerifiedJWS<Payload: Sendable>: Sendable {
    let payload: Payload
    /// The validated chain, shared with the chain cache (a reference, not a copy of three certificates).
    let chain: ChainCache.Entry
}

extension SignedDataVerifier {
    /// Parses, checks the header, verifies the signature, decodes the payload and validates the chain
    /// (from the cache when possible). Identity checks are the caller's.
    func verifySignedData<Payload: Decodable & Sendable>(
        _ token: String,
        as type: Payload.Type,
        expecting kind: SignedDataKind? = nil,
        signedDate: (Payload) -> Date?
    ) async throws(AppStoreVerificationError) -> VerifiedJWS<Payload> {
        let jws = try CompactJWS(token, maximumSize: configuration.maximumInputSize)
        let now = configuration.clock()
        let cached = cachedChain(for: jws, now: now)

        let leafKey: P256.Signing.PublicKey
        var parsedCertificates: (leaf: Certificate, intermediate: Certificate)?
        if let cached {
            leafKey = cached.leafKey
        } else {
            let header = try Self.parseHeader(of: jws)
            leafKey = header.leafKey
            parsedCertificates = (header.leaf, header.intermediate)
        }

        guard jws.hasValidSignature(for: leafKey, prefix: cached?.signingInputPrefix) else {
            throw AppStoreVerificationError(
                .invalidSignature,
                "the ES256 signature does not match the signing certificate"
            )
        }

        let payloadBytes = try jws.decodedPayload()
        let payload: Payload
        do {
            payload = try AppStoreJSON.decode(Payload.self, from: payloadBytes)
        } catch {
            throw AppStoreVerificationError(
                .malformed,
                "the payload does not decode as \(Payload.self): \(Self.describe(error))"
            )
        }
        if let kind {
            let keys = try Self.payloadKeys(of: jws)
            if let detected = SignedDataKind.detect(keys: keys), detected != kind {
                throw AppStoreVerificationError(
                    .unexpectedKind,
                    "expected \(kind.rawValue) but the payload is \(detected.rawValue)"
                )
            }
        }

        let time = validationTime(signedDate: signedDate(payload), now: now)
        if let cached, cached.validity.contains(time) {
            return VerifiedJWS(payload: payload, chain: cached)
        }
        var certificates = parsedCertificates
        if certificates == nil, let cached {
            certificates = (leaf: cached.chain.leaf, intermediate: cached.chain.intermediate)
        }
        guard let certificates else {
            // Unreachable: either the cache or the header supplied the certificates.
            throw AppStoreVerificationError(.malformed, "no certificates to validate")
        }
        let chain = try await validator.validate(
            leaf: certificates.leaf,
            intermediate: certificates.intermediate,
            at: time
        )
        let entry = storeChain(chain, leafKey: leafKey, for: jws, now: now)
        return VerifiedJWS(payload: payload, chain: entry)
    }

    /// The time certificates must be valid at, per configuration.
    func validationTime(signedDate: Date?, now: Date) -> Date {
        switch configuration.validationTime {
        case .fixed(let date):
            return date
        case .currentTime:
            return now
        case .signedDate:
            return checksRevocation ? now : (signedDate ?? now)
        }
    }

    /// The header's certificates and the leaf's key, after checking `alg` and the `x5c` count.
    static func parseHeader(
        of jws: CompactJWS
    ) throws(AppStoreVerificationError) -> (
        leaf: Certificate, intermediate: Certificate, leafKey: P256.Signing.PublicKey
    ) {
        let headerBytes = try jws.decodedHeader()
        let header: JWSHeader
        do {
            header = try AppStoreJSON.decode(JWSHeader.self, from: headerBytes)
        } catch {
            throw AppStoreVerificationError(
                .malformed,
                "the header is not a JSON object with string alg and x5c entries"
            )
        }
        guard let alg = header.alg else {
            throw AppStoreVerificationError(.unsupportedAlgorithm, "the header has no alg")
        }
        guard alg == "ES256" else {
            throw AppStoreVerificationError(.unsupportedAlgorithm, "alg must be ES256, not \(alg.prefix(32))")
        }
        guard let x5c = header.x5c else {
            throw AppStoreVerificationError(.invalidChainLength, "the header has no x5c certificate chain")
        }
        guard x5c.count == 3 else {
            throw AppStoreVerificationError(.invalidChainLength, "x5c must hold 3 certificates, not \(x5c.count)")
        }
        let leaf = try parseCertificate(x5c[0], name: "leaf")
        let intermediate = try parseCertificate(x5c[1], name: "intermediate")
        guard let leafKey = P256.Signing.PublicKey(leaf.publicKey) else {
            throw AppStoreVerificationError(.invalidCertificate, "the signing certificate's key is not P-256")
        }
        return (leaf, intermediate, leafKey)
    }

    private static func parseCertificate(_ text: String, name: String) throws(AppStoreVerificationError) -> Certificate
    {
        guard let der = Base64.decodeStandard(text) else {
            throw AppStoreVerificationError(.invalidCertificate, "the \(name) certificate is not base64")
        }
        do {
            return try Certificate(derEncoded: der)
        } catch {
            throw AppStoreVerificationError(
                .invalidCertificate,
                "the \(name) certificate is not a DER X.509 certificate"
            )
        }
    }

    /// The top-level keys of the payload object.
    static func payloadKeys(of jws: CompactJWS) throws(AppStoreVerificationError) -> Set<String> {
        guard let keys = AppStoreJSON.objectKeys(of: try jws.decodedPayload()) else {
            throw AppStoreVerificationError(.malformed, "the payload is not a JSON object")
        }
        return keys
    }

    /// A short description of a decoding error that names the field, never the data.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "invalid JSON" }
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "top level" : path
        }
        switch error {
        case .typeMismatch(_, let context): return "wrong type at \(path(context))"
        case .valueNotFound(_, let context): return "missing value at \(path(context))"
        case .keyNotFound(let key, _): return "missing key \(key.stringValue)"
        case .dataCorrupted(let context): return "invalid JSON at \(path(context))"
        @unknown default: return "invalid JSON"
        }
    }
}
