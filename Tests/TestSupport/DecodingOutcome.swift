/// What a decoder made of a document: the value, or a failure (which error does not matter when
/// two decoders are compared).
public enum DecodingOutcome<T: Equatable>: Equatable {
    case value(T)
    case failure

    public init(_ decode: () throws -> T) {
        self = (try? decode()).map { .value($0) } ?? .failure
    }
}
