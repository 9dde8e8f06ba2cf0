/// TestSupport defines the seeded generator; re-exported so grant's tests that import only this
/// module keep using it by the same name.
@_exported import struct TestSupport.SeededGenerator
