import Foundation

// The seeded generator is defined once, as SimulatedCustomers' SplitMix64 (the simulated customers
// and grant's generated lifecycles under Sources use it too); re-exported so tests that import only
// this module use it by the name they always have.
@_exported import struct SimulatedCustomers.SplitMix64

/// A deterministic random number generator (SplitMix64): the same seed gives the same streams and
/// the same shuffles on every machine, so a failing order or mutation can be replayed.
public typealias SeededGenerator = SplitMix64

extension SplitMix64 {
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
