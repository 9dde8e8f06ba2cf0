/// Apple's error body: `{"errorCode": 4040010, "errorMessage": "Transaction id not found."}`.
public struct ErrorPayload: Codable, Hashable, Sendable {
    public var errorCode: Int64?
    public var errorMessage: String?
    public init(errorCode: Int64?, errorMessage: String?) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}
