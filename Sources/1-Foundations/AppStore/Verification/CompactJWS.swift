import Crypto
import Foundation
import JSONCoding

/// The three segments of a compact JWS, split and decoded without trusting anything yet.
///
/// Parsing is strict (exactly three non-empty base64url segments, canonical encoding) and bounded in
/// size, so hostile input is rejected before any JSON or certificate parsing happens. The payload is
/// decoded here, once (decoding also validates it); the header is decoded only when its chain is not
/// cached, because a cached header is byte-identical to one that already decoded and verified.
///
/// The token is read in place (a native `String` stores contiguous UTF-8), not copied: the
/// notification's token is ~15 KB and each nested one several KB.
struct CompactJWS: Sendable {
    /// The whole token, with contiguous UTF-8 storage.
    private let token: String
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
        var token = token
        token.makeContiguousUTF8()
        let parts = Self.withBytes(of: token) { bytes in Self.split(bytes) }
        guard let (headerRange, payloadRange, signatureRange) = parts else {
            throw AppStoreVerificationError(.malformed, "a compact JWS has exactly three segments separated by '.'")
        }
        guard !headerRange.isEmpty, !payloadRange.isEmpty, !signatureRange.isEmpty else {
            throw AppStoreVerificationError(.malformed, "a JWS segment is empty")
        }
        // The header is not checked here: a cached header is byte-identical to one that decoded and
        // verified before, and any other header is decoded (and so validated) before it is used.
        let (payload, signature, payloadIsAlphabet) = Self.withBytes(of: token) { bytes in
            let payload = Base64.decodeURL(UnsafeBufferPointer(rebasing: bytes[payloadRange]))
            return (
                payload,
                Base64.decodeURL(UnsafeBufferPointer(rebasing: bytes[signatureRange])),
                payload != nil || Self.isBase64URL(UnsafeBufferPointer(rebasing: bytes[payloadRange]))
            )
        }
        if payload == nil {
            // Foreign characters or an impossible length are malformed at once; only a non-canonical
            // last character waits for the signature check (see `payload`).
            guard payloadRange.count % 4 != 1, payloadIsAlphabet else {
                throw AppStoreVerificationError(.malformed, "the payload segment is not base64url")
            }
        }
        guard let signature else {
            throw AppStoreVerificationError(.malformed, "the signature segment is not canonical base64url")
        }
        self.token = token
        self.headerRange = headerRange
        self.payloadRange = payloadRange
        self.signature = signature
        self.payload = payload
    }

    /// Calls `body` with the token's UTF-8 bytes, in place when (as always after
    /// `makeContiguousUTF8()`) the string stores them contiguously.
    private static func withBytes<R>(of token: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try token.utf8.withContiguousStorageIfAvailable(body) { return result }
        return try Array(token.utf8).withUnsafeBufferPointer(body)
    }

    private func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try Self.withBytes(of: token, body)
    }

    /// The three segments' ranges, or `nil` unless there are exactly two dots. memchr keeps the scan
    /// fast even in unoptimised builds (the fuzz test runs in debug).
    private static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (Range<Int>, Range<Int>, Range<Int>)? {
        guard let base = bytes.baseAddress else { return nil }
        let length = bytes.count
        var dots: (Int, Int) = (-1, -1)
        var found = 0
        var offset = 0
        while found < 3, offset < length, let hit = memchr(base + offset, Int32(UInt8(ascii: ".")), length - offset) {
            let index = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if found == 0 { dots.0 = index } else if found == 1 { dots.1 = index }
            found += 1
            offset = index + 1
        }
        guard found == 2 else { return nil }
        return (0..<dots.0, (dots.0 + 1)..<dots.1, (dots.1 + 1)..<length)
    }

    /// Whether every byte is in the base64url alphabet (a plain loop: the generic `Slice` iteration
    /// is slow in the unoptimised builds the fuzz test runs in).
    private static func isBase64URL(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < text.count {
            switch text[index] {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                index += 1
            default:
                return false
            }
        }
        return true
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
        try withBytes { try body(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0[headerRange]))) }
    }

    /// The header segment's bytes, copied (stored as a cache key).
    var headerBytes: [UInt8] { withBytes { Array($0[headerRange]) } }

    /// Decodes the header segment.
    func decodedHeader() throws(AppStoreVerificationError) -> [UInt8] {
        let decoded = withBytes { buffer in
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
        withBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0[0..<payloadRange.lowerBound]))) }
        return hasher
    }

    /// Whether the ES256 signature is valid for `header.payload` under `key`.
    /// - Parameter prefix: the SHA-256 state after exactly this token's `header.` (from the chain
    ///   cache, keyed by the same header bytes), so only the payload is hashed; `nil` hashes everything.
    func hasValidSignature(for key: P256.Signing.PublicKey, prefix: SHA256? = nil) -> Bool {
        // Data from raw bytes: the generic `Sequence` path the array would take costs more.
        guard signature.count == 64,
            let ecdsaSignature = signature.withUnsafeBytes({ try? P256.Signing.ECDSASignature(rawRepresentation: Data($0)) })
        else { return false }
        var hasher = prefix ?? SHA256()
        let start = prefix == nil ? 0 : payloadRange.lowerBound
        withBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0[start..<payloadRange.upperBound]))) }
        return key.isValidSignature(ecdsaSignature, for: hasher.finalize())
    }
}
