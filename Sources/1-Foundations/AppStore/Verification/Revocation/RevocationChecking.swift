/// Online revocation checking (OCSP) of the leaf and intermediate, off unless configured.
///
/// When on, certificates are validated at the current time (as Apple's libraries do online) and each
/// verified chain, including its OCSP result, is reused for ``cacheLifetime`` seconds, so a steady
/// stream asks the responder about a chain once per lifetime instead of twice per JWS.
public struct RevocationChecking: Sendable {
    /// How OCSP requests reach the responder.
    public var transport: any OCSPTransport
    /// Seconds an OCSP-checked chain stays trusted before it is checked again; Apple uses 15 minutes.
    public var cacheLifetime: Double

    /// - Note: swift-certificates bounds all OCSP requests of one chain to 10 seconds in total and
    ///   cancels the transport call after that; a cancelled call counts as unreachable (retryable).
    public init(transport: any OCSPTransport, cacheLifetime: Double = 15 * 60) {
        self.transport = transport
        self.cacheLifetime = cacheLifetime
    }
}
