/// Carries one OCSP request to a responder and brings back its answer.
///
/// The verifier builds and checks OCSP messages itself; only the network hop is pluggable, so
/// production can use an HTTP client and tests can answer in-process without the internet.
public protocol OCSPTransport: Sendable {
    /// Sends a DER-encoded OCSP request and returns the DER-encoded response.
    ///
    /// An HTTP implementation POSTs `request` to `url` with `Content-Type: application/ocsp-request`
    /// (Apple's responders: `http://ocsp.apple.com/...`, 30 s timeout) and returns the body of a 200.
    /// - Parameters:
    ///   - request: DER-encoded `OCSPRequest`.
    ///   - url: The responder URL from the certificate's Authority Information Access extension.
    /// - Returns: DER-encoded `OCSPResponse`.
    /// - Throws: Any error when the responder could not be reached or did not answer 200; the
    ///   verifier reports it as retryable (`revocation_check_unavailable`).
    func send(request: [UInt8], to url: String) async throws -> [UInt8]
}
