import AppStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Why ingest refused a request: a stable code, an HTTP status and a sentence, sent as
/// `{"error":{"code":…,"message":…}}`. Nothing internal (broker addresses, stack traces) leaks.
public struct IngestError: HTTPResponseError, CustomStringConvertible {
    /// The `request.<reason>` and `auth.<reason>` codes of ingest's answers (schemas/headers.md).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidJSON = Code(rawValue: "request.invalid_json")
        public static let missingField = Code(rawValue: "request.missing_field")
        public static let invalidJWS = Code(rawValue: "request.invalid_jws")
        public static let jwsTooLarge = Code(rawValue: "request.jws_too_large")
        public static let untrustedChain = Code(rawValue: "request.untrusted_chain")
        public static let invalidField = Code(rawValue: "request.invalid_field")
        public static let bodyTooLarge = Code(rawValue: "request.body_too_large")
        public static let unsupportedMediaType = Code(rawValue: "request.unsupported_media_type")
        /// The broker did not take the body; the caller retries (503).
        public static let brokerUnavailable = Code(rawValue: "kafka.broker_unavailable")

        public static let missingCredentials = Code(rawValue: "auth.missing_credentials")
        public static let malformedToken = Code(rawValue: "auth.malformed_token")
        public static let unsupportedAlgorithm = Code(rawValue: "auth.unsupported_algorithm")
        public static let unknownKey = Code(rawValue: "auth.unknown_key")
        /// The identity provider's keys could not be loaded (503).
        public static let keysUnavailable = Code(rawValue: "auth.keys_unavailable")
        public static let badSignature = Code(rawValue: "auth.bad_signature")
        public static let wrongIssuer = Code(rawValue: "auth.wrong_issuer")
        public static let wrongAudience = Code(rawValue: "auth.wrong_audience")
        public static let missingExpiry = Code(rawValue: "auth.missing_expiry")
        public static let tokenExpired = Code(rawValue: "auth.token_expired")
        public static let tokenNotYetValid = Code(rawValue: "auth.token_not_yet_valid")
        public static let missingUserClaim = Code(rawValue: "auth.missing_user_claim")
        public static let invalidTimestamp = Code(rawValue: "auth.invalid_timestamp")
        public static let badHMAC = Code(rawValue: "auth.bad_hmac")
        public static let staleTimestamp = Code(rawValue: "auth.stale_timestamp")
        /// The receipt lists no in-app purchase, so there is nothing to look up (400).
        public static let receiptWithoutPurchase = Code(rawValue: "receipt.no_purchase")
        /// The body names a customer other than the authenticated user's own (403).
        public static let foreignAccountToken = Code(rawValue: "auth.foreign_account_token")
        /// Offer signatures are served, but not for the app the request names (400).
        public static let offerAppNotConfigured = Code(rawValue: "offer.app_not_configured")
        /// The authenticated user made more uploads than `INGEST_USER_UPLOADS_PER_MINUTE` allows (429).
        public static let userRateLimited = Code(rawValue: "request.user_rate_limited")
    }

    public let status: HTTPResponse.Status
    public let code: Code
    public let message: String
    /// The `WWW-Authenticate` challenge of a 401: which credential the route expects.
    public let challenge: String?
    /// Seconds to send as `Retry-After` (a 503 sends 1 without it).
    public var retryAfterSeconds: Int?
    /// The request's ID (as ingest accepted it), echoed in `X-Request-Id` so a client can quote it.
    public private(set) var requestID: String?

    public init(_ status: HTTPResponse.Status, _ code: Code, _ message: String, challenge: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.challenge = challenge
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfterSeconds {
            headers[.retryAfter] = String(retryAfterSeconds)
        } else if status == .serviceUnavailable {
            headers[.retryAfter] = "1"
        }
        if let challenge { headers[.wwwAuthenticate] = challenge }
        if let requestID { headers[.requestID] = requestID }
        let body = try JSONEncoder().encode(["error": ["code": code.rawValue, "message": message]])
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    func answering(_ requestID: String) -> IngestError {
        var error = self
        error.requestID = requestID
        return error
    }

    static func invalidJSON() -> IngestError { .init(.badRequest, .invalidJSON, "the body is not a JSON object") }
    static func missingField(_ name: String) -> IngestError {
        .init(.badRequest, .missingField, "the body has no string field \"\(name)\"")
    }
    static func invalidJWS(_ name: String, _ why: String) -> IngestError {
        .init(.badRequest, .invalidJWS, "\(name) is not a compact JWS: \(why)")
    }
    static func untrustedChain(_ name: String, _ why: String) -> IngestError {
        .init(.badRequest, .untrustedChain, "\(name) is not signed by an App Store certificate chain: \(why)")
    }
    static func jwsTooLarge(_ name: String, limit: Int) -> IngestError {
        .init(.badRequest, .jwsTooLarge, "\(name) is larger than \(limit) bytes")
    }
    static func invalidField(_ name: String, _ why: String) -> IngestError {
        .init(.badRequest, .invalidField, "\(name) \(why)")
    }
    static func bodyTooLarge(limit: Int) -> IngestError {
        .init(.contentTooLarge, .bodyTooLarge, "the body is larger than \(limit) bytes")
    }
    static func unsupportedMediaType(_ type: String) -> IngestError {
        .init(.unsupportedMediaType, .unsupportedMediaType, "the body must be application/json, not \(type)")
    }
    static func receipt(_ error: LegacyReceiptError) -> IngestError {
        .init(.badRequest, Code(rawValue: error.code.rawValue), "the receipt cannot be read: \(error.message)")
    }
    static func receiptTransactionNotNumeric() -> IngestError {
        .init(
            .badRequest, Code(rawValue: LegacyReceiptError.Code.malformed.rawValue), "the receipt's transaction identifier is not Apple's numeric ID")
    }
    static func receiptWithoutPurchase() -> IngestError {
        .init(.badRequest, .receiptWithoutPurchase, "the receipt lists no in-app purchase; nothing to look up")
    }
    static func foreignAccountToken() -> IngestError {
        .init(
            .forbidden, .foreignAccountToken,
            "appAccountToken names a customer other than the authenticated user's own; send the user's own (GET /v1/customer) or none")
    }
    static func foreignOfferAccountToken() -> IngestError {
        .init(
            .forbidden, .foreignAccountToken,
            "appAccountToken names a customer other than the authenticated user's own; offers are signed only for the user's own customer (GET /v1/customer), so send it or none"
        )
    }
    static func offerAppNotConfigured(_ bundleId: String) -> IngestError {
        .init(.badRequest, .offerAppNotConfigured, "offer signatures are not configured for the app \(bundleId.prefix(256)) (OFFER_SIGNING_APPS)")
    }
    static func userRateLimited(retryAfterSeconds: Int) -> IngestError {
        var error = IngestError(
            .tooManyRequests, .userRateLimited,
            "this user has made too many uploads; retry after \(retryAfterSeconds) s (INGEST_USER_UPLOADS_PER_MINUTE)")
        error.retryAfterSeconds = retryAfterSeconds
        return error
    }
    static func brokerUnavailable() -> IngestError {
        .init(.serviceUnavailable, .brokerUnavailable, "the notification could not be stored; retry later")
    }
}
