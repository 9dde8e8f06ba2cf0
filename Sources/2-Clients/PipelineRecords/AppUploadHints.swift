import Foundation

/// What an app said about its own upload: who it believes the buyer is. Claims, kept beside the
/// verified transaction so enrich and grant can weigh them against Apple's data; how far they can
/// be believed is ``authentication``.
public struct AppUploadHints: Codable, Hashable, Sendable {
    /// The `appAccountToken` the app sent with the upload (Apple's copy is in the transaction).
    public var appAccountToken: UUID?
    /// The app's own user identifier: with `jwt`, the identity provider's claim, never the body's.
    public var userId: String?
    /// How ingest authenticated the upload; nil for records written before ingest said so, which
    /// count as unauthenticated.
    public var authentication: UploadAuthentication?

    public init(appAccountToken: UUID? = nil, userId: String? = nil, authentication: UploadAuthentication? = nil) {
        self.appAccountToken = appAccountToken
        self.userId = userId
        self.authentication = authentication
    }

    /// Whether ingest checked a credential that vouches for ``userId`` (a bearer token from the
    /// app's identity provider, or a backend's HMAC signature).
    public var isAuthenticated: Bool { authentication?.vouchesForUser ?? false }
}

/// How an upload reached the raw topic: the raw body's `userAuthentication`, set by ingest
/// (`INGEST_UPLOAD_AUTH`), never by the client.
public enum UploadAuthentication: String, Codable, Hashable, Sendable, CaseIterable {
    /// A bearer JWT from the app's identity provider; the user is its subject claim.
    case jwt
    /// An HMAC over the body from the app's backend, which vouches for the body's `userId`.
    case hmac
    /// Open uploads (`none`), allowed only when every app is Sandbox-only. Not spelled `none`
    /// in Swift, where `.none` in an optional context means nil.
    case open = "none"

    public var vouchesForUser: Bool { self != .open }
}

extension AppUploadHints {
    /// The longest `userId` an upload may carry, in UTF-8 bytes.
    public static let maximumUserIdBytes = 256

    /// The rule for an upload's `appAccountToken`, shared by ingest (which answers 400) and verify
    /// (which dead-letters): a UUID string, in any case.
    public static func appAccountToken(from text: String) -> UUID? { UUID(uuidString: text) }

    /// The rule for an upload's `userId`, from the body or a token's claim: non-empty, at most
    /// ``maximumUserIdBytes``, and no control character. Postgres cannot store a NUL in text or
    /// jsonb (grant would fail on the record), and a line break or escape would forge log lines.
    public static func isValidUserId(_ user: String) -> Bool {
        !user.isEmpty && user.utf8.count <= maximumUserIdBytes
            && !user.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
