import AppStore
import Foundation
import Hummingbird
import NIOCore

/// The simulator's OCSP responder over HTTP (`POST /ocsp/root`, `POST /ocsp/intermediate`: the
/// URLs its intermediate and leaf name, RFC 6960 over POST) and its controls under `/sim/ocsp`.
struct SimulatorOCSPRoutes: Sendable {
    let ocsp: SimulatedOCSP

    /// Largest request read; an OCSP request for one certificate is about 100 bytes.
    static let maximumRequestBytes = 16 << 10

    func register(on router: Router<BasicRequestContext>) {
        // One responder answers for both issuers (it tells them apart by the request's issuer key hash).
        router.post("/ocsp/:issuer") { request, _ in
            let body = try await request.body.collect(upTo: Self.maximumRequestBytes)
            guard let answer = try ocsp.answer(Array(body.readableBytesView)) else {
                return Response(status: .serviceUnavailable)
            }
            return Response(
                status: .ok, headers: [.contentType: "application/ocsp-response"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer)))
        }
        router.get("/sim/ocsp") { _, _ in try SimulatorAPIRoutes.json(ocsp.status) }
        router.put("/sim/ocsp/revoked/:certificate") { _, context in
            ocsp.revoke(try certificate(context))
            return try SimulatorAPIRoutes.json(ocsp.status)
        }
        router.delete("/sim/ocsp/revoked/:certificate") { _, context in
            ocsp.reinstate(try certificate(context))
            return try SimulatorAPIRoutes.json(ocsp.status)
        }
        router.put("/sim/ocsp/fault") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 10)
            guard let setting = try? AppStoreJSON.decoder.decode(SimulatedOCSP.FaultSetting.self, from: Data(body.readableBytesView)) else {
                let modes = SimulatedOCSP.Fault.allCases.map(\.rawValue).joined(separator: ", ")
                throw HTTPError(.badRequest, message: "the body is {\"mode\": …} with one of \(modes)")
            }
            ocsp.setFault(setting.mode)
            return try SimulatorAPIRoutes.json(ocsp.status)
        }
        router.delete("/sim/ocsp/fault") { _, _ in
            ocsp.setFault(.none)
            return try SimulatorAPIRoutes.json(ocsp.status)
        }
    }

    private func certificate(_ context: BasicRequestContext) throws -> SimulatedOCSP.Certificate {
        let name = try context.parameters.require("certificate")
        guard let certificate = SimulatedOCSP.Certificate(rawValue: name) else {
            throw HTTPError(.badRequest, message: "the certificate is leaf or intermediate")
        }
        return certificate
    }
}
