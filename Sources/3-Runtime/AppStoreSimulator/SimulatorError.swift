import AppStoreServerAPI
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error answer exactly as Apple shapes it: the status, and `{"errorCode","errorMessage"}`
/// (401 has no body, as at Apple; 429 carries `Retry-After` as a UNIX time in milliseconds).
struct SimulatorError: Error, HTTPResponseError {
    let status: HTTPResponse.Status
    let errorCode: Int64?
    let errorMessage: String
    var retryAfterMilliseconds: Int64?

    init(_ status: HTTPResponse.Status, _ errorCode: Int64?, _ errorMessage: String, retryAfterMilliseconds: Int64? = nil) {
        self.status = status
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.retryAfterMilliseconds = retryAfterMilliseconds
    }

    static let unauthorized = SimulatorError(.unauthorized, nil, "")

    static func badRequest(_ code: Int64, _ message: String) -> SimulatorError { SimulatorError(.badRequest, code, message) }
    static func notFound(_ code: Int64, _ message: String) -> SimulatorError { SimulatorError(.notFound, code, message) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        if let retryAfterMilliseconds { headers[.retryAfter] = "\(retryAfterMilliseconds)" }
        guard let errorCode else { return Response(status: status, headers: headers) }
        headers[.contentType] = "application/json"
        let body = (try? JSONEncoder().encode(ErrorPayload(errorCode: errorCode, errorMessage: errorMessage))) ?? Data()
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
