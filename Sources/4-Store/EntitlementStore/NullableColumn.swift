import Foundation
import NIOCore
import PostgresNIO

/// A one-dimensional Postgres array whose elements may be NULL, in the binary array format:
/// postgres-nio encodes `[T]` but not `[T?]`, and a column of a batch (a note, a signed date, an
/// external user ID) is often absent. Bound as `$n::text[]`, `$n::timestamptz[]`, …
struct NullableColumn<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable,
    PostgresDynamicTypeEncodable
{
    var values: [Element?]

    init(_ values: [Element?]) { self.values = values }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        // Dimensions (0 for an empty array), whether any element is NULL, the element type.
        buffer.writeInteger(values.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(values.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !values.isEmpty else { return }
        // The one dimension: its length and lower bound.
        buffer.writeInteger(Int32(values.count), as: Int32.self)
        buffer.writeInteger(1, as: Int32.self)
        for value in values {
            if let value {
                let lengthIndex = buffer.writerIndex
                buffer.writeInteger(0, as: Int32.self)
                let start = buffer.writerIndex
                value.encode(into: &buffer, context: context)
                buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex, as: Int32.self)
            } else {
                buffer.writeInteger(-1, as: Int32.self)
            }
        }
    }
}

/// A moment as Postgres's `timestamptz`, to the nearest microsecond. postgres-nio's `Date` encoding
/// truncates, and a millisecond of Apple's is held by a Double as a hair below or above itself
/// depending on how the Date was made: truncated, the same moment was stored as …643 or …642999.
struct PostgresMicroseconds: PostgresArrayEncodable, PostgresNonThrowingEncodable {
    /// Microseconds since 2000-01-01 00:00 UTC, Postgres's epoch.
    let microseconds: Int64

    init(_ date: Date) {
        microseconds = Int64(((date.timeIntervalSince1970 - 946_684_800) * 1_000_000).rounded())
    }

    static var psqlType: PostgresDataType { .timestamptz }
    static var psqlFormat: PostgresFormat { .binary }
    static var psqlArrayType: PostgresDataType { .timestamptzArray }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(microseconds)
    }
}
