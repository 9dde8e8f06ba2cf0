import Crypto
import Foundation
import JSONCoding
import SwiftASN1
import Synchronization
import X509

/// A payload whose JWS signature and chain are verified (identity not yet checked).
struct VerifiedJWS<Payload: Sendable>: Sendable {
    let payload: Payload
    /// The validated chain, shared with the chain cache (a reference, not a copy of three certificates).
    let chain: ChainCache.Entry
}

extension SignedDataVerifier {
    /// Parses, checks the header, verifies the signature, decodes the payload and validates the chain
    /// (from the cache when possible), or takes a token verified before byte for byte when the
    /// verified-token cache is on and the token still holds at this validation time. Identity checks
    /// are the caller's.
    func verifySignedData<Payload: Decodable & Sendable>(
        _ token: String,
        as type: Payload.Type,
        expecting kind: SignedDataKind? = nil,
        signedDate: (Payload) -> Date?
    ) async throws(AppStoreVerificationError) -> VerifiedJWS<Payload> {
        let now = configuration.clock()
        let tokenKey = usesTokenCache ? VerifiedTokenCache.key(of: token) : nil
        if let tokenKey, let remembered = rememberedToken(tokenKey, as: type, expecting: kind, signedDate: signedDate, now: now) {
            return remembered
        }
        let verified = try await verifyInFull(token, as: type, expecting: kind, signedDate: signedDate, now: now)
        if let tokenKey {
            let entry = VerifiedTokenCache.Entry(payload: verified.payload, chain: verified.chain, checkedKind: kind)
            tokenCache.withLock { $0.insert(tokenKey, entry: entry) }
        }
        return verified
    }

    /// A token verified before, byte for byte, if it still holds now: decoded as `type`, checked as
    /// `kind` when one is asked for, and its chain valid at the validation time computed now and no
    /// older than a cached chain may be. Identity checks stay the caller's, on every hit.
    private func rememberedToken<Payload: Decodable & Sendable>(
        _ key: SHA256Digest,
        as type: Payload.Type,
        expecting kind: SignedDataKind?,
        signedDate: (Payload) -> Date?,
        now: Date
    ) -> VerifiedJWS<Payload>? {
        let maximumAge = chainMaximumAge
        let entry = tokenCache.withLock { cache in
            cache.lookup(key) { entry in
                guard let payload = entry.payload as? Payload, kind == nil || entry.checkedKind == kind else { return false }
                let age = now.timeIntervalSince(entry.chain.insertedAt)
                guard age >= 0, age <= maximumAge else { return false }
                return entry.chain.validity.contains(validationTime(signedDate: signedDate(payload), now: now))
            }
        }
        guard let entry, let payload = entry.payload as? Payload else { return nil }
        return VerifiedJWS(payload: payload, chain: entry.chain)
    }

    /// The first check of a token: everything ``verifySignedData(_:as:expecting:signedDate:)`` promises.
    private func verifyInFull<Payload: Decodable & Sendable>(
        _ token: String,
        as type: Payload.Type,
        expecting kind: SignedDataKind?,
        signedDate: (Payload) -> Date?,
        now: Date
    ) async throws(AppStoreVerificationError) -> VerifiedJWS<Payload> {
        let jws = try CompactJWS(token, maximumSize: configuration.maximumInputSize)
        // The warm path: no certificate is parsed, copied or validated.
        if let cached = cachedChain(for: jws, now: now) {
            try Self.checkSignature(of: jws, key: cached.leafKey, prefix: cached.signingInputPrefix)
            let payload = try Self.decodePayload(of: jws, as: type, expecting: kind)
            let time = validationTime(signedDate: signedDate(payload), now: now)
            if cached.validity.contains(time) {
                return VerifiedJWS(payload: payload, chain: cached)
            }
            let chain = try await validator.validate(
                leaf: cached.chain.leaf, intermediate: cached.chain.intermediate, at: time)
            let entry = storeChain(chain, leafKey: cached.leafKey, for: jws, now: now)
            return VerifiedJWS(payload: payload, chain: entry)
        }
        if acceptsXcode, let xcode = try Self.xcodeTestingSigner(of: jws) {
            try Self.checkSignature(of: jws, key: xcode.key, prefix: nil)
            let payload = try Self.decodePayload(of: jws, as: type, expecting: kind)
            let chain = ValidatedChain(
                leaf: xcode.certificate, intermediate: xcode.certificate, root: xcode.certificate, isAnchoredInAppleRoot: false,
                revocationChecked: false, isXcodeTesting: true)
            // No validity period applies (Apple's libraries check nothing of Xcode's certificate), and
            // the entry is not cached: test deployments see few such tokens.
            let entry = ChainCache.Entry(
                chain: chain, leafKey: xcode.key, validity: Date.distantPast...Date.distantFuture, insertedAt: now,
                signingInputPrefix: SHA256())
            return VerifiedJWS(payload: payload, chain: entry)
        }
        let header = try Self.parseHeader(of: jws)
        try Self.checkSignature(of: jws, key: header.leafKey, prefix: nil)
        let payload = try Self.decodePayload(of: jws, as: type, expecting: kind)
        let time = validationTime(signedDate: signedDate(payload), now: now)
        let chain = try await validator.validate(leaf: header.leaf, intermediate: header.intermediate, at: time)
        let entry = storeChain(chain, leafKey: header.leafKey, for: jws, now: now)
        return VerifiedJWS(payload: payload, chain: entry)
    }

    private static func checkSignature(
        of jws: CompactJWS,
        key: P256.Signing.PublicKey,
        prefix: SHA256?
    ) throws(AppStoreVerificationError) {
        guard jws.hasValidSignature(for: key, prefix: prefix) else {
            throw AppStoreVerificationError(
                .invalidSignature,
                "the ES256 signature does not match the signing certificate"
            )
        }
    }

    /// The payload as `type`, after checking (when `kind` is given) that it is not another kind.
    private static func decodePayload<Payload: Decodable>(
        of jws: CompactJWS,
        as type: Payload.Type,
        expecting kind: SignedDataKind?
    ) throws(AppStoreVerificationError) -> Payload {
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
        return payload
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

    /// StoreKit Testing in Xcode's signer: an ES256 header whose `x5c` holds exactly one
    /// certificate with a P-256 key; `nil` for any other header (it takes the App Store path).
    static func xcodeTestingSigner(
        of jws: CompactJWS
    ) throws(AppStoreVerificationError) -> (certificate: Certificate, key: P256.Signing.PublicKey)? {
        guard let header = try? AppStoreJSON.decode(JWSHeader.self, from: try jws.decodedHeader()),
            header.alg == "ES256", let x5c = header.x5c, x5c.count == 1
        else { return nil }
        let certificate = try parseCertificate(x5c[0], name: "Xcode signing")
        guard let key = P256.Signing.PublicKey(certificate.publicKey) else {
            throw AppStoreVerificationError(.invalidCertificate, "the Xcode signing certificate's key is not P-256")
        }
        return (certificate, key)
    }

    private static func parseCertificate(_ text: String, name: String) throws(AppStoreVerificationError) -> Certificate {
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
