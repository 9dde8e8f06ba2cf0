/// A verifier configuration that cannot be used safely.
///
/// Raised at construction so a misconfigured stage fails at start-up, not on the first notification.
public struct AppStoreConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it.
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
