import SwiftASN1
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
        let answer: [UInt8]
        do {
            answer = try await transport.send(request: request, to: uri)
        } catch {
            failures.withLock { $0.append("\(uri): \(error)") }
            return .terminalError(error)
        }
        // A responder that answers but cannot say now (RFC 6960 4.2.1: internalError, tryLater) is
        // as good as unreachable: asking again later is what its status asks for.
        if let status = Self.unsuccessfulStatus(answer), let name = Self.transientStatuses[status] {
            failures.withLock { $0.append("\(uri): the responder answered \(name)") }
        }
        return .response(answer)
    }

    /// The OCSPResponse statuses that say "ask again" (2 internalError, 3 tryLater).
    static let transientStatuses: [UInt8: String] = [2: "internalError", 3: "tryLater"]

    /// The `responseStatus` of a DER `OCSPResponse` when it is not `successful` (0); `nil` for a
    /// successful or unreadable one (swift-certificates judges those).
    static func unsuccessfulStatus(_ der: [UInt8]) -> UInt8? {
        guard let root = try? DER.parse(der), case .constructed(let children) = root.content,
            let first = children.first(where: { _ in true }), first.identifier == .enumerated,
            case .primitive(let value) = first.content, value.count == 1, let status = value.first, status != 0
        else { return nil }
        return status
    }
}
