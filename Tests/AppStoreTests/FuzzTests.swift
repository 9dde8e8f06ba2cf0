import AppStore
import AppStoreSigning
import Foundation
import Testing

/// SplitMix64: a tiny deterministic generator so every run mutates the same way (the fuzz and
/// decoding tests of this target share it).
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(state: UInt64) { self.state = state }
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Fuzzing the verifier with mutated notifications")
struct FuzzTests {
    static let mutationCount = 100_000
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"".utf8)

    /// One random mutation of `bytes`: most stay inside the base64url alphabet so they reach the
    /// signature, header and JSON checks rather than stopping at the first character test.
    static func mutate(_ original: [UInt8], using random: inout SplitMix64) -> [UInt8] {
        var bytes = original
        let position = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<10, using: &random) {
        case 0...3:
            bytes[position] = alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
        case 4:
            bytes[position] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
        case 5:
            bytes.remove(at: position)
        case 6:
            bytes.insert(alphabet[Int.random(in: 0..<alphabet.count, using: &random)], at: position)
        case 7:
            bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...64, using: &random)))
        case 8:
            let other = Int.random(in: 0..<bytes.count, using: &random)
            bytes.swapAt(position, other)
        default:
            // Duplicate a slice (segment-level damage).
            let length = Int.random(in: 1...256, using: &random)
            let slice = bytes[position..<min(bytes.count, position + length)]
            bytes.insert(contentsOf: slice, at: Int.random(in: 0...bytes.count, using: &random))
        }
        return bytes
    }

    static func decodedParts(_ token: String) -> [[UInt8]]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let decoded = parts.compactMap { Base64.decodeURL($0) }
        return decoded.count == 3 ? decoded : nil
    }

    @Test("100,000 mutations of a notification: only identical content is accepted, the rest fails with a typed error")
    func mutations() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let token = try TestPKI.notification(signer: authority.makeSigner())
        _ = try await verifier.verifyNotification(signedPayload: token)
        let original = Array(token.utf8)
        let originalParts = try #require(Self.decodedParts(token))

        var random = SplitMix64(state: 0x5EED_0F_A11_CAFE)
        var rejectedByCode: [String: Int] = [:]
        var accepted = 0
        let clock = ContinuousClock()
        let started = clock.now
        for index in 0..<Self.mutationCount {
            // The verifier never suspends on this input: let the suites running beside this one in.
            if index % 64 == 0 { await Task.yield() }
            let mutated = String(decoding: Self.mutate(original, using: &random), as: UTF8.self)
            do {
                _ = try await verifier.verifyNotification(signedPayload: mutated)
                accepted += 1
                #expect(Self.decodedParts(mutated) == originalParts, "accepted a mutation with different content")
            } catch {
                rejectedByCode[error.code.rawValue, default: 0] += 1
            }
        }
        let elapsed = clock.now - started
        let summary = rejectedByCode.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        print("fuzz: \(Self.mutationCount) mutations in \(elapsed); accepted \(accepted); rejected \(summary)")
        #expect(accepted + rejectedByCode.values.reduce(0, +) == Self.mutationCount)
        #expect(rejectedByCode.keys.allSatisfy { !$0.isEmpty })
        #expect(rejectedByCode["invalid_signature", default: 0] > Self.mutationCount / 2)
    }
}
