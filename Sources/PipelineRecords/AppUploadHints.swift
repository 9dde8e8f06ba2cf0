import Foundation

/// What an app said about its own upload: who it believes the buyer is. Unverified claims, kept
/// beside the verified transaction so enrich and grant can weigh them against Apple's data.
public struct AppUploadHints: Codable, Hashable, Sendable {
    /// The `appAccountToken` the app sent with the upload (Apple's copy is in the transaction).
    public var appAccountToken: UUID?
    /// The app's own user identifier.
    public var userId: String?

    public init(appAccountToken: UUID? = nil, userId: String? = nil) {
        self.appAccountToken = appAccountToken
        self.userId = userId
    }
}
