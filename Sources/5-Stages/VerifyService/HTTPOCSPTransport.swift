import AppStore
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Carries the verifier's OCSP requests over HTTP: a POST of the DER request with
/// `Content-Type: application/ocsp-request` to the URL in the certificate's Authority Information
/// Access extension (`http://ocsp.apple.com/...` for Apple's chain), as Apple's libraries do.
///
/// Anything but a 200 with a body of at most ``maximumResponseBytes`` throws, and the verifier turns
/// every throw into `verification.revocation_check_unavailable` (transient): the record waits, it is
/// never refused because a responder was down. Whether the answer is usable is the verifier's call.
public struct HTTPOCSPTransport: OCSPTransport {
    /// The client the requests go through (`HTTPClient.shared` unless given).
    public let client: HTTPClient
    /// How long one request may take. swift-certificates bounds a whole chain's OCSP checks to 10 s,
    /// so the default lets the leaf's and the intermediate's requests both finish inside that.
    public let timeout: Duration
    /// Largest answer read; Apple's are about 2 KB, so a bigger one is a broken or hostile responder.
    public let maximumResponseBytes: Int

    public init(client: HTTPClient = .shared, timeout: Duration = .seconds(5), maximumResponseBytes: Int = 64 << 10) {
        self.client = client
        self.timeout = timeout
        self.maximumResponseBytes = maximumResponseBytes
    }

    public func send(request: [UInt8], to url: String) async throws -> [UInt8] {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            parsed.host != nil
        else {
            throw OCSPTransportError(.invalidURL, "the OCSP location \"\(url.prefix(200))\" is not an http(s) URL")
        }
        var post = HTTPClientRequest(url: url)
        post.method = .POST
        post.headers.add(name: "Content-Type", value: "application/ocsp-request")
        post.headers.add(name: "Accept", value: "application/ocsp-response")
        post.body = .bytes(ByteBuffer(bytes: request))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(post, timeout: Self.timeAmount(timeout))
        } catch {
            throw OCSPTransportError(.unreachable, "POST \(url) failed: \(error)")
        }
        guard response.status == .ok else {
            // Drain what is left so the connection can be reused; its content says nothing we use.
            _ = try? await response.body.collect(upTo: maximumResponseBytes)
            throw OCSPTransportError(.httpStatus, "POST \(url) answered \(response.status.code)")
        }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: maximumResponseBytes)
        } catch is NIOTooManyBytesError {
            throw OCSPTransportError(.responseTooLarge, "POST \(url) answered more than \(maximumResponseBytes) bytes")
        } catch {
            throw OCSPTransportError(.unreachable, "reading the answer of POST \(url) failed: \(error)")
        }
        return Array(body.readableBytesView)
    }

    /// `duration` as NIO's `TimeAmount`, in whole nanoseconds.
    static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Why an OCSP request brought back no answer to check. The verifier reports each as
/// `verification.revocation_check_unavailable` with this error's description in its message.
public struct OCSPTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The certificate's OCSP location is not an http(s) URL.
        public static let invalidURL = Code(rawValue: "ocsp.invalid_url")
        /// No answer: connection refused or reset, DNS, TLS, timeout, cancelled.
        public static let unreachable = Code(rawValue: "ocsp.unreachable")
        /// The responder answered with a status other than 200.
        public static let httpStatus = Code(rawValue: "ocsp.http_status")
        /// The answer was larger than the transport reads.
        public static let responseTooLarge = Code(rawValue: "ocsp.response_too_large")
    }

    public var code: Code
    /// What happened, with the URL; never request or response bytes.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
