import Foundation

/// A deterministic random number generator (SplitMix64): the same seed gives the same streams and
/// the same shuffles on every machine, so a failing order or mutation can be replayed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed of a randomized test: the environment variable `variable` when it is set (to replay
    /// a failure), otherwise a fresh one. Printed either way, with the line that replays it.
    public static func seed(from variable: String, label: String) -> UInt64 {
        let given = ProcessInfo.processInfo.environment[variable]
        let seed = given.flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        if let given, UInt64(given) == nil { print("\(label): \(variable)=\(given) is not an unsigned integer; using a fresh seed") }
        print("\(label): seed \(seed) (\(variable)=\(seed) replays this run)")
        return seed
    }
}
