import Crypto
import Foundation

/// The three segments of a compact JWS, split and decoded without trusting anything yet.
///
/// Parsing is strict (exactly three non-empty base64url segments, canonical encoding) and bounded in
/// size, so hostile input is rejected before any JSON or certificate parsing happens.
struct CompactJWS: Sendable {
    /// The UTF-8 bytes of the whole token, followed by one NUL (for `strspn`).
    let bytes: [UInt8]
    /// Byte range of the header segment (base64url text).
    let headerRange: Range<Int>
    /// Byte range of the payload segment (base64url text).
    let payloadRange: Range<Int>
    /// The decoded signature (raw R‖S, 64 bytes for ES256).
    let signature: [UInt8]

    init(_ token: String, maximumSize: Int) throws(AppStoreVerificationError) {
        guard token.utf8.count <= maximumSize else {
            throw AppStoreVerificationError(.malformed, "input is larger than \(maximumSize) bytes")
        }
        var bytes = Array(token.utf8)
        let length = bytes.count
        bytes.append(0)
        // memchr and strspn keep scanning fast even in unoptimised builds (the fuzz test runs in debug).
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
        // Header and payload are decoded later (after the signature check); reject foreign characters
        // and impossible lengths now, so such input is malformed rather than a signature failure.
        for (range, name) in [(headerRange, "header"), (payloadRange, "payload")] {
            let valid = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return strspn(base.assumingMemoryBound(to: CChar.self) + range.lowerBound, Self.alphabet)
            }
            guard valid >= range.count, range.count % 4 != 1 else {
                throw AppStoreVerificationError(.malformed, "the \(name) segment is not base64url")
            }
        }
        let signature = bytes.withUnsafeBufferPointer { buffer in
            Base64.decodeURL(UnsafeBufferPointer(rebasing: buffer[signatureRange]))
        }
        guard let signature else {
            throw AppStoreVerificationError(.malformed, "the signature segment is not canonical base64url")
        }
        self.bytes = bytes
        self.headerRange = headerRange
        self.payloadRange = payloadRange
        self.signature = signature
    }

    private static let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /// The header segment's text, used as the chain cache key: it contains `alg` and the exact `x5c`.
    var headerSegment: String { String(decoding: bytes[headerRange], as: UTF8.self) }

    /// Decodes the header segment.
    func decodedHeader() throws(AppStoreVerificationError) -> [UInt8] {
        try decodeSegment(headerRange, name: "header")
    }

    /// Decodes the payload segment.
    func decodedPayload() throws(AppStoreVerificationError) -> [UInt8] {
        try decodeSegment(payloadRange, name: "payload")
    }

    /// Whether the ES256 signature is valid for `header.payload` under `key`.
    func hasValidSignature(for key: P256.Signing.PublicKey) -> Bool {
        guard signature.count == 64,
            let ecdsaSignature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        let digest = bytes.withUnsafeBufferPointer { buffer in
            SHA256.hash(
                data: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[0..<payloadRange.upperBound]))
            )
        }
        return key.isValidSignature(ecdsaSignature, for: digest)
    }

    private func decodeSegment(_ range: Range<Int>, name: String) throws(AppStoreVerificationError) -> [UInt8] {
        let decoded = bytes.withUnsafeBufferPointer { buffer in
            Base64.decodeURL(UnsafeBufferPointer(rebasing: buffer[range]))
        }
        guard let decoded else {
            throw AppStoreVerificationError(.malformed, "the \(name) segment is not canonical base64url")
        }
        return decoded
    }
}
