import AppStore
import AppStoreSigning
import Foundation
import TestSupport
import Testing

@Suite("Fuzzing the verifier with mutated notifications")
struct FuzzTests {
    static let mutationCount = 100_000
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"".utf8)

    /// One random mutation of `bytes`: most stay inside the base64url alphabet so they reach the
    /// signature, header and JSON checks rather than stopping at the first character test.
    static func mutate(_ original: [UInt8], using random: inout SeededGenerator) -> [UInt8] {
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

    /// What a mutation changed, judged by comparing the mutated token with the original segment by
    /// segment in the order the verifier reads them: the split into three segments, then the header
    /// (its chain), then the signed payload and the signature.
    enum Damage: String, CaseIterable {
        /// The same bytes (a character replaced by itself, two equal ones swapped).
        case none
        /// Not three non-empty segments.
        case structure
        /// The header segment differs (whatever else does).
        case header
        /// Same header; the payload segment differs.
        case payload
        /// Same header and payload; only the signature segment differs.
        case signature

        init(_ mutated: [UInt8], original: [UInt8]) {
            self = mutated.withUnsafeBytes { mutated in original.withUnsafeBytes { Damage(mutated, original: $0) } }
        }

        /// Compares with `memchr` and `memcmp`: the generic `split` and `==` of a debug build took two
        /// thirds of this test's time, which is the verifier's to take.
        private init(_ mutated: UnsafeRawBufferPointer, original: UnsafeRawBufferPointer) {
            if Self.equal(mutated, 0..<mutated.count, original, 0..<original.count) {
                self = .none
                return
            }
            let segments = Self.segments(mutated)
            let originals = Self.segments(original)
            if segments.count != 3 || segments.contains(where: \.isEmpty) {
                self = .structure
            } else if !Self.equal(mutated, segments[0], original, originals[0]) {
                self = .header
            } else if !Self.equal(mutated, segments[1], original, originals[1]) {
                self = .payload
            } else {
                self = .signature
            }
        }

        /// The ranges between the dots of a token.
        private static func segments(_ bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
            guard let base = bytes.baseAddress else { return [0..<0] }
            var ranges: [Range<Int>] = []
            var start = 0
            while start <= bytes.count, let dot = memchr(base + start, Int32(UInt8(ascii: ".")), bytes.count - start) {
                let index = base.distance(to: UnsafeRawPointer(dot))
                ranges.append(start..<index)
                start = index + 1
            }
            ranges.append(start..<bytes.count)
            return ranges
        }

        private static func equal(_ a: UnsafeRawBufferPointer, _ ra: Range<Int>, _ b: UnsafeRawBufferPointer, _ rb: Range<Int>) -> Bool {
            guard ra.count == rb.count else { return false }
            guard ra.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
            return memcmp(pa + ra.lowerBound, pb + rb.lowerBound, ra.count) == 0
        }

        /// The codes a rejection may carry: those of the checks that read what changed, and of the
        /// signature check, which fails for any change to the signed bytes. Never an identity code
        /// (bundle, environment…): those would mean the verifier read tampered content as Apple's.
        var allowedCodes: Set<String> {
            let parsing: Set<AppStoreVerificationError.Code> = [.malformed]
            let signature: Set<AppStoreVerificationError.Code> = [.malformed, .invalidSignature]
            let header: Set<AppStoreVerificationError.Code> = [
                .malformed, .unsupportedAlgorithm, .invalidChainLength, .invalidCertificate, .untrustedRoot, .invalidChain,
                .missingMarkerExtension, .invalidSignature,
            ]
            let codes: Set<AppStoreVerificationError.Code> =
                switch self {
                case .none: []
                case .structure: parsing
                case .header: header
                case .payload, .signature: signature
                }
            return Set(codes.map(\.rawValue))
        }
    }

    @Test("100,000 mutations of a notification: exactly the unchanged ones are accepted, each rejection has a code its damage allows")
    func mutations() async throws {
        let authority = try TestPKI.authority()
        let verifier = try TestPKI.verifier(trusting: [authority.root])
        let token = try TestPKI.notification(signer: authority.makeSigner())
        _ = try await verifier.verifyNotification(signedPayload: token)
        let original = Array(token.utf8)

        var random = SeededGenerator(seed: 0x5EED_0F_A11_CAFE)
        var outcomes: [Damage: [String: Int]] = [:]
        var wrongVerdicts: [String] = []
        let clock = ContinuousClock()
        let started = clock.now
        for index in 0..<Self.mutationCount {
            // The verifier never suspends on this input: let the suites running beside this one in.
            if index % 64 == 0 { await Task.yield() }
            let bytes = Self.mutate(original, using: &random)
            let damage = Damage(bytes, original: original)
            let outcome: String
            do {
                _ = try await verifier.verifyNotification(signedPayload: String(decoding: bytes, as: UTF8.self))
                outcome = "accepted"
                if damage != .none { wrongVerdicts.append("mutation \(index) (\(damage)) was accepted") }
            } catch {
                outcome = error.code.rawValue
                if !damage.allowedCodes.contains(outcome) { wrongVerdicts.append("mutation \(index) (\(damage)) was rejected with \(error)") }
            }
            outcomes[damage, default: [:]][outcome, default: 0] += 1
        }
        let elapsed = clock.now - started
        for damage in Damage.allCases {
            let summary = (outcomes[damage] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            print("fuzz: \(damage): \(summary)")
        }
        print("fuzz: \(Self.mutationCount) mutations in \(elapsed)")
        #expect(wrongVerdicts.isEmpty, "\(wrongVerdicts.count) wrong verdicts, e.g. \(wrongVerdicts.prefix(5))")
        // The mutations reach every part of the token, and most of them the signature check.
        for damage in [Damage.structure, .header, .payload, .signature] {
            #expect(outcomes[damage, default: [:]].values.reduce(0, +) > 100, "too few mutations damaged the \(damage)")
        }
        let invalidSignatures = outcomes.values.reduce(0) { $0 + $1[AppStoreVerificationError.Code.invalidSignature.rawValue, default: 0] }
        #expect(invalidSignatures > Self.mutationCount / 2)
    }
}
