import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Why ingest refused a request: a stable code, an HTTP status and a sentence, sent as
/// `{"error":{"code":…,"message":…}}`. Nothing internal (broker addresses, stack traces) leaks.
public struct IngestError: HTTPResponseError, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    /// The `WWW-Authenticate` challenge of a 401: which credential the route expects.
    public let challenge: String?
    /// The request's ID (as ingest accepted it), echoed in `X-Request-Id` so a client can quote it.
    public private(set) var requestID: String?

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, challenge: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.challenge = challenge
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if status == .serviceUnavailable { headers[.retryAfter] = "1" }
        if let challenge { headers[.wwwAuthenticate] = challenge }
        if let requestID { headers[.requestID] = requestID }
        let body = try JSONEncoder().encode(["error": ["code": code, "message": message]])
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    func answering(_ requestID: String) -> IngestError {
        var error = self
        error.requestID = requestID
        return error
    }

    static func invalidJSON() -> IngestError { .init(.badRequest, "invalid_json", "the body is not a JSON object") }
    static func missingField(_ name: String) -> IngestError {
        .init(.badRequest, "missing_field", "the body has no string field \"\(name)\"")
    }
    static func invalidJWS(_ name: String, _ why: String) -> IngestError {
        .init(.badRequest, "invalid_jws", "\(name) is not a compact JWS: \(why)")
    }
    static func jwsTooLarge(_ name: String, limit: Int) -> IngestError {
        .init(.badRequest, "jws_too_large", "\(name) is larger than \(limit) bytes")
    }
    static func invalidField(_ name: String, _ why: String) -> IngestError {
        .init(.badRequest, "invalid_field", "\(name) \(why)")
    }
    static func bodyTooLarge(limit: Int) -> IngestError {
        .init(.contentTooLarge, "body_too_large", "the body is larger than \(limit) bytes")
    }
    static func unsupportedMediaType(_ type: String) -> IngestError {
        .init(.unsupportedMediaType, "unsupported_media_type", "the body must be application/json, not \(type)")
    }
    static func brokerUnavailable() -> IngestError {
        .init(.serviceUnavailable, "broker_unavailable", "the notification could not be stored; retry later")
    }
}
