import Synchronization
import X509

/// Bridges our ``OCSPTransport`` to swift-certificates' `OCSPRequester` and remembers whether the
/// network failed.
///
/// swift-certificates reports every OCSP failure as a policy failure string; recording transport
/// errors here lets the verifier tell "responder unreachable, retry" from "certificate revoked"
/// without parsing messages.
final class OCSPRequesterAdapter: OCSPRequester, Sendable {
    private let transport: any OCSPTransport
    private let failures = Mutex<[String]>([])

    init(transport: any OCSPTransport) {
        self.transport = transport
    }

    /// Descriptions of transport failures seen so far.
    var transportFailures: [String] {
        failures.withLock { $0 }
    }

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        do {
            return .response(try await transport.send(request: request, to: uri))
        } catch {
            failures.withLock { $0.append("\(uri): \(error)") }
            return .terminalError(error)
        }
    }
}
