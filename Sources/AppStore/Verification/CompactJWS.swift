import Crypto
import Foundation

/// The three segments of a compact JWS, split and decoded without trusting anything yet.
///
/// Parsing is strict (exactly three non-empty base64url segments, canonical encoding) and bounded in
/// size, so hostile input is rejected before any JSON or certificate parsing happens. The payload is
/// decoded here, once (decoding also validates it); the header is decoded only when its chain is not
/// cached, because a cached header is byte-identical to one that already decoded and verified.
struct CompactJWS: Sendable {
    /// The UTF-8 bytes of the whole token.
    let bytes: [UInt8]
    /// Byte range of the header segment (base64url text).
    let headerRange: Range<Int>
    /// Byte range of the payload segment (base64url text).
    let payloadRange: Range<Int>
    /// The decoded signature (raw R‖S, 64 bytes for ES256).
    let signature: [UInt8]
    /// The decoded payload (JSON, unverified until the signature is checked); `nil` when the segment
    /// uses the alphabet but is not canonical, which ``decodedPayload()`` reports after the signature
    /// check, as a tampered token is better called a signature failure.
    private let payload: [UInt8]?

    init(_ token: String, maximumSize: Int) throws(AppStoreVerificationError) {
        guard token.utf8.count <= maximumSize else {
            throw AppStoreVerificationError(.malformed, "input is larger than \(maximumSize) bytes")
        }
        let bytes = Array(token.utf8)
        let length = bytes.count
        // memchr keeps scanning fast even in unoptimised builds (the fuzz test runs in debug).
        let dots: [Int] = bytes.withUnsafeBytes { buffer in
            var found: [Int] = []
            guard let base = buffer.baseAddress else { return found }
            var offset = 0
            while found.count < 3, offset < length,
                let hit = memchr(base + offset, Int32(UInt8(ascii: ".")), length - offset)
            {
                let index = base.distance(to: UnsafeRawPointer(hit))
                found.append(index)
                offset = index + 1
            }
            return found
        }
        guard dots.count == 2 else {
            throw AppStoreVerificationError(.malformed, "a compact JWS has exactly three segments separated by '.'")
        }
        let headerRange = 0..<dots[0]
        let payloadRange = (dots[0] + 1)..<dots[1]
        let signatureRange = (dots[1] + 1)..<length
        guard !headerRange.isEmpty, !payloadRange.isEmpty, !signatureRange.isEmpty else {
            throw AppStoreVerificationError(.malformed, "a JWS segment is empty")
        }
        // The header is not checked here: a cached header is byte-identical to one that decoded and
        // verified before, and any other header is decoded (and so validated) before it is used.
        let (payload, signature) = bytes.withUnsafeBufferPointer { buffer in
            (
                Base64.decodeURL(UnsafeBufferPointer(rebasing: buffer[payloadRange])),
                Base64.decodeURL(UnsafeBufferPointer(rebasing: buffer[signatureRange]))
            )
        }
        if payload == nil {
            // Foreign characters or an impossible length are malformed at once; only a non-canonical
            // last character waits for the signature check (see `payload`).
            guard payloadRange.count % 4 != 1, Self.isBase64URL(bytes[payloadRange]) else {
                throw AppStoreVerificationError(.malformed, "the payload segment is not base64url")
            }
        }
        guard let signature else {
            throw AppStoreVerificationError(.malformed, "the signature segment is not canonical base64url")
        }
        self.bytes = bytes
        self.headerRange = headerRange
        self.payloadRange = payloadRange
        self.signature = signature
        self.payload = payload
    }

    private static func isBase64URL(_ text: ArraySlice<UInt8>) -> Bool {
        text.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }

    /// The decoded payload.
    func decodedPayload() throws(AppStoreVerificationError) -> [UInt8] {
        guard let payload else {
            throw AppStoreVerificationError(.malformed, "the payload segment is not canonical base64url")
        }
        return payload
    }

    /// Calls `body` with the header segment's bytes: the chain cache key (it holds `alg` and the exact `x5c`).
    func withHeaderBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[headerRange])) }
    }

    /// The header segment's bytes, copied (stored as a cache key).
    var headerBytes: [UInt8] { Array(bytes[headerRange]) }

    /// Decodes the header segment.
    func decodedHeader() throws(AppStoreVerificationError) -> [UInt8] {
        let decoded = bytes.withUnsafeBufferPointer { buffer in
            Base64.decodeURL(UnsafeBufferPointer(rebasing: buffer[headerRange]))
        }
        guard let decoded else {
            throw AppStoreVerificationError(.malformed, "the header segment is not canonical base64url")
        }
        return decoded
    }

    /// The SHA-256 state after `header.`, the part of the signing input every JWS with this header shares.
    func signingInputPrefix() -> SHA256 {
        var hasher = SHA256()
        bytes.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<payloadRange.lowerBound])) }
        return hasher
    }

    /// Whether the ES256 signature is valid for `header.payload` under `key`.
    /// - Parameter prefix: the SHA-256 state after exactly this token's `header.` (from the chain
    ///   cache, keyed by the same header bytes), so only the payload is hashed; `nil` hashes everything.
    func hasValidSignature(for key: P256.Signing.PublicKey, prefix: SHA256? = nil) -> Bool {
        guard signature.count == 64,
            let ecdsaSignature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        var hasher = prefix ?? SHA256()
        let start = prefix == nil ? 0 : payloadRange.lowerBound
        bytes.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[start..<payloadRange.upperBound])) }
        return key.isValidSignature(ecdsaSignature, for: hasher.finalize())
    }
}
