// TestSupport names the seeded generator (SimulatedCustomers' SplitMix64); both re-exported so
// grant's tests that import only this module keep using it by the same name.
@_exported import struct SimulatedCustomers.SplitMix64
@_exported import typealias TestSupport.SeededGenerator
