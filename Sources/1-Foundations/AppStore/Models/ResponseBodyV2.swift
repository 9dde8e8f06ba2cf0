/// The HTTP body Apple POSTs to the notification webhook: `{"signedPayload": "<JWS>"}`.
///
/// See [responseBodyV2](https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2).
public struct ResponseBodyV2: Codable, Hashable, Sendable {
    /// The notification as a compact JWS; verify it with ``SignedDataVerifier/verifyNotification(signedPayload:)``.
    public var signedPayload: String?

    public init(signedPayload: String? = nil) {
        self.signedPayload = signedPayload
    }
}
