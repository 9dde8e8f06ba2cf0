/// Why a signing authority could not be created, stored, loaded or used.
public struct SigningAuthorityError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong; never contains key material.
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
