import AppStore
import ErrorClassification
import Foundation

/// A failed App Store Server API call, classified the way a caller must react to it.
///
/// Apple's error body `{"errorCode": 4040010, "errorMessage": "…"}` is kept as ``errorCode`` and
/// ``apiMessage``. ``isTransient`` follows Apple's "Errors to retry": 429 (after ``retryAfter``),
/// the retryable codes 4040002, 4040004, 4040006 and 5000001, any other 5xx, timeouts and
/// connection failures, and 401: Apple refusing our key (revoked, rotated, a clock off) is an
/// outage for every request, not the record's fault, so callers wait until it heals rather than
/// dead-letter everything within seconds. Everything else (bad request, not found, an untrusted or
/// malformed response) is permanent. ``code`` is a stable machine-readable code for dead-letter
/// headers and dashboards (`apple_api.4040010`, `apple_api.unauthorized`, …); ``message`` is a
/// human sentence without secrets or payloads. The shape matches the stage runtime's
/// `ClassifiedError`, which the enrich stage conforms it to.
public struct AppStoreAPIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Hashable, Sendable {
        /// Apple answered with an error status (see ``AppStoreAPIError/statusCode`` and ``AppStoreAPIError/errorCode``).
        case apiError = "api_error"
        /// 401: the token's signature or claims were refused.
        case unauthorized
        /// 429: over Apple's rate limit.
        case rateLimited = "rate_limited"
        /// Not sent: this process's budget for the endpoint has no room within the wait its
        /// environment allows (a Sandbox burst; ``RateLimitPolicy/sandboxMaximumWait``).
        case budgetDeferred = "budget_deferred"
        /// The request did not complete in time.
        case timeout
        /// No connection, or the connection broke.
        case unreachable
        /// A 2xx answer that does not decode.
        case invalidResponse = "invalid_response"
        /// A JWS in the answer failed verification, or names another app or environment.
        case untrustedResponse = "untrusted_response"
        /// The client is misconfigured (no credentials for the bundle ID, an environment Apple has no API for).
        case invalidRequest = "invalid_request"
        /// The `.p8` key or the credential list is unusable.
        case invalidCredentials = "invalid_credentials"
    }

    /// The `apple_api.<reason>` codes (schemas/headers.md).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// 401: the request token was refused.
        public static let unauthorized = Code(rawValue: "apple_api.unauthorized")
        /// 429: over Apple's rate limit.
        public static let rateLimited = Code(rawValue: "apple_api.rate_limited")
        /// Not sent: the budget has no room within the wait allowed; asked again at ``AppStoreAPIError/retryAfter``.
        public static let budgetDeferred = Code(rawValue: "apple_api.budget_deferred")
        /// The request did not complete in time.
        public static let timeout = Code(rawValue: "apple_api.timeout")
        /// No connection, or the connection broke.
        public static let unreachable = Code(rawValue: "apple_api.unreachable")
        /// A 2xx answer that does not decode.
        public static let invalidResponse = Code(rawValue: "apple_api.invalid_response")
        /// A JWS in the answer failed verification, or names another app or environment.
        public static let untrustedResponse = Code(rawValue: "apple_api.untrusted_response")
        /// No credentials for the bundle ID, or an environment Apple has no API for.
        public static let invalidRequest = Code(rawValue: "apple_api.invalid_request")
        /// The `.p8` key or the credential list is unusable.
        public static let invalidCredentials = Code(rawValue: "apple_api.invalid_credentials")

        /// Apple's numeric `errorCode`: `apple_api.4040010`.
        public static func apple(_ errorCode: Int64) -> Code { Code(rawValue: "apple_api.\(errorCode)") }
        /// An error status without Apple's error body: `apple_api.http_503`.
        public static func http(_ status: Int) -> Code { Code(rawValue: "apple_api.http_\(status)") }

    }

    /// Apple's codes in the "Errors to retry" group.
    public static let retryableErrorCodes: Set<Int64> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]

    public var kind: Kind
    /// The HTTP status, when Apple answered.
    public var statusCode: Int?
    /// Apple's numeric `errorCode`, when the body had one.
    public var errorCode: Int64?
    /// Apple's `errorMessage`, when the body had one.
    public var apiMessage: String?
    /// When Apple said to try again (429 `Retry-After`, a UNIX time in milliseconds), as a wait from now.
    public var retryAfter: Duration?
    /// The human sentence.
    public var message: String
    /// The endpoint, for logs (`GET /inApps/v2/history`), when known.
    public var endpoint: String?

    public init(
        _ kind: Kind, _ message: String, statusCode: Int? = nil, errorCode: Int64? = nil, apiMessage: String? = nil,
        retryAfter: Duration? = nil, endpoint: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.statusCode = statusCode
        self.errorCode = errorCode
        self.apiMessage = apiMessage
        self.retryAfter = retryAfter
        self.endpoint = endpoint
    }

    /// True when the same request may succeed later.
    public var isTransient: Bool {
        switch kind {
        case .rateLimited, .budgetDeferred, .timeout, .unreachable, .unauthorized: return true
        case .apiError:
            if let errorCode, Self.retryableErrorCodes.contains(errorCode) { return true }
            if let statusCode, statusCode >= 500 { return true }
            return false
        case .invalidResponse, .untrustedResponse, .invalidRequest, .invalidCredentials:
            return false
        }
    }

    /// A deferred request is not a failure: the record waits for its budget, set aside.
    public var isDeferral: Bool { kind == .budgetDeferred }

    /// Stable code: `apple_api.<errorCode>` when Apple gave one, otherwise by kind
    /// (`apple_api.unauthorized`, `apple_api.rate_limited`, `apple_api.http_<status>`, `apple_api.timeout`…).
    public var code: Code {
        if let errorCode { return .apple(errorCode) }
        switch kind {
        case .apiError: return .http(statusCode ?? 0)
        case .unauthorized: return .unauthorized
        case .rateLimited: return .rateLimited
        case .budgetDeferred: return .budgetDeferred
        case .timeout: return .timeout
        case .unreachable: return .unreachable
        case .invalidResponse: return .invalidResponse
        case .untrustedResponse: return .untrustedResponse
        case .invalidRequest: return .invalidRequest
        case .invalidCredentials: return .invalidCredentials
        }
    }

    public var description: String { "\(code): \(message)" }

    /// Builds the error for an HTTP error answer from Apple.
    /// - Parameters:
    ///   - body: The answer's body (Apple's `{"errorCode","errorMessage"}` when present).
    ///   - retryAfterHeader: The `Retry-After` header value.
    ///   - now: The current time, to turn Apple's absolute retry time into a wait.
    public static func fromResponse(
        status: Int, body: [UInt8], retryAfterHeader: String?, endpoint: String, now: Date = Date()
    ) -> AppStoreAPIError {
        let payload = try? JSONDecoder().decode(ErrorPayload.self, from: Data(body))
        let apiCode = payload?.errorCode
        let apiMessage = payload?.errorMessage.map { String($0.prefix(300)) }
        let kind: Kind
        switch status {
        case 401: kind = .unauthorized
        case 429: kind = .rateLimited
        default: kind = .apiError
        }
        var sentence = "\(endpoint) answered HTTP \(status)"
        if let apiCode { sentence += " with error \(apiCode)" }
        if let apiMessage { sentence += " (\(apiMessage))" }
        if kind == .unauthorized { sentence += "; the request token was refused (key, key ID, issuer, bundle ID or lifetime)" }
        return AppStoreAPIError(
            kind, sentence, statusCode: status, errorCode: apiCode, apiMessage: apiMessage,
            retryAfter: status == 429 ? parseRetryAfter(retryAfterHeader, now: now) : nil, endpoint: endpoint)
    }

    /// Apple's `Retry-After` is a UNIX time in milliseconds; a small number is read as seconds to wait
    /// (the HTTP standard form), so a proxy in between cannot make the client hammer Apple.
    public static func parseRetryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), let number = Int64(value), number >= 0 else {
            return nil
        }
        if number >= 100_000_000_000 {
            let wait = number - AppStoreJSON.milliseconds(since1970: now)
            return .milliseconds(max(0, wait))
        }
        return .seconds(number)
    }
}
