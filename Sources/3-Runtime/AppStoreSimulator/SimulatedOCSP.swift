import AppStoreSigning
import Foundation
import Synchronization
import X509

/// The simulator's OCSP responder state: which of its certificates are revoked, what the responder
/// does wrong on purpose, and counters, changeable at runtime (`/sim/ocsp`).
///
/// The answers themselves come from ``OCSPResponder`` for the simulator's ``SigningAuthority``;
/// this type only decides, per request, whether to answer, and with what.
public final class SimulatedOCSP: Sendable {
    /// A certificate of the simulator's chain that can be revoked.
    public enum Certificate: String, Codable, CaseIterable, Sendable {
        case leaf, intermediate
    }

    /// What the responder does instead of answering well.
    public enum Fault: String, Codable, CaseIterable, Sendable {
        /// Answers normally.
        case none
        /// Answers 503 with no body, as a responder that is down behind a load balancer.
        case unavailable
        /// Answers 200 with a body that is no DER `OCSPResponse`.
        case malformed
        /// Answers 200 with an `OCSPResponse` whose status is `tryLater` (3): up, but unable to answer now.
        case tryLater
    }

    /// What `GET /sim/ocsp` shows.
    public struct Status: Codable, Hashable, Sendable {
        /// The base URL the simulator's intermediate and leaf name (`<base>/root`, `<base>/intermediate`).
        public var ocspBaseURL: String?
        public var revoked: [Certificate]
        public var fault: Fault
        /// OCSP requests received, answered with a real answer, and answered by the fault.
        public var requests: Int
        public var answered: Int
        public var faulted: Int
    }

    /// The body of `PUT /sim/ocsp/fault`.
    public struct FaultSetting: Codable, Hashable, Sendable {
        public var mode: Fault
        public init(mode: Fault) { self.mode = mode }
    }

    private struct State {
        var revoked: Set<Certificate> = []
        var fault: Fault = .none
        var requests = 0
        var answered = 0
        var faulted = 0
    }

    /// The authority answered for.
    public let authority: SigningAuthority
    private let state = Mutex(State())

    public init(authority: SigningAuthority) {
        self.authority = authority
    }

    /// Reports `certificate` as revoked from now on.
    public func revoke(_ certificate: Certificate) {
        state.withLock { _ = $0.revoked.insert(certificate) }
    }

    /// Reports `certificate` as good again.
    public func reinstate(_ certificate: Certificate) {
        state.withLock { _ = $0.revoked.remove(certificate) }
    }

    /// Sets what the responder does wrong (``Fault/none`` to answer normally).
    public func setFault(_ fault: Fault) {
        state.withLock { $0.fault = fault }
    }

    /// Nothing revoked, no fault, counters at zero (`POST /sim/reset`).
    public func reset() {
        state.withLock { $0 = State() }
    }

    public var status: Status {
        state.withLock { s in
            Status(
                ocspBaseURL: authority.ocspBaseURL, revoked: Certificate.allCases.filter { s.revoked.contains($0) }, fault: s.fault,
                requests: s.requests, answered: s.answered, faulted: s.faulted)
        }
    }

    /// The answer to one DER `OCSPRequest`: `nil` for "answer 503", else the body of a 200.
    func answer(_ request: [UInt8]) throws -> [UInt8]? {
        let (fault, revoked) = state.withLock { s in
            s.requests += 1
            if s.fault == .none { s.answered += 1 } else { s.faulted += 1 }
            return (s.fault, s.revoked)
        }
        switch fault {
        case .unavailable:
            return nil
        case .malformed:
            return Array("this is not an OCSP response".utf8)
        case .tryLater:
            return try OCSPResponder.unsuccessful(status: 3)
        case .none:
            var serials = Set<X509.Certificate.SerialNumber>()
            if revoked.contains(.leaf) { serials.insert(authority.leaf.serialNumber) }
            if revoked.contains(.intermediate) { serials.insert(authority.intermediate.serialNumber) }
            return try OCSPResponder(authority: authority, revokedSerialNumbers: serials).response(to: request)
        }
    }
}
