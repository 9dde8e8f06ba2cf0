import AppStore
import AppStoreSimulator
import Foundation
import Hummingbird
import NIOCore
import SimulatedCustomers
import SimulatedDelivery

/// `POST /sim/lifecycle` starts playing simulated customers to a webhook; `GET /sim/lifecycle` shows
/// progress, the delivery report and each customer's expected entitlements (the ground truth);
/// `POST /sim/lifecycle/prepare` applies and signs a run at once and answers its requests.
public struct LifecycleRoutes: Sendable {
    public let runs: LifecycleRuns

    public init(runs: LifecycleRuns) {
        self.runs = runs
    }

    public func register(on router: Router<BasicRequestContext>) {
        router.post("/sim/lifecycle") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let run: LifecycleRunRequest
            do {
                run = try AppStoreJSON.decoder.decode(LifecycleRunRequest.self, from: Data(body.readableBytesView))
            } catch {
                throw HTTPError(.badRequest, message: "the body is not a lifecycle run request: \(error)")
            }
            do {
                return try Self.json(try runs.start(run), status: .accepted)
            } catch let error as SimulatorInputError {
                throw HTTPError(.conflict, message: error.description)
            }
        }
        // The requests a run would send, signed ahead: one a line, the path, a space, the JSON body
        // (the end-to-end bench posts them with wrk, so signing does not limit what it offers).
        router.post("/sim/lifecycle/prepare") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let prepare: LifecyclePrepareRequest
            do {
                prepare = try AppStoreJSON.decoder.decode(LifecyclePrepareRequest.self, from: Data(body.readableBytesView))
            } catch {
                throw HTTPError(.badRequest, message: "the body is not a lifecycle prepare request: \(error)")
            }
            let requests: [LifecyclePlayer.PreparedRequest]
            do {
                requests = try await runs.prepare(prepare)
            } catch let error as SimulatorInputError {
                throw HTTPError(.conflict, message: error.description)
            }
            var lines = ByteBuffer()
            lines.reserveCapacity(requests.reduce(0) { $0 + $1.path.utf8.count + $1.body.readableBytes + 2 })
            for prepared in requests {
                lines.writeString(prepared.path)
                lines.writeInteger(UInt8(ascii: " "))
                lines.writeImmutableBuffer(prepared.body)
                lines.writeInteger(UInt8(ascii: "\n"))
            }
            return Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: ResponseBody(byteBuffer: lines))
        }
        router.get("/sim/lifecycle") { _, _ in try Self.json(runs.status) }
        // The catalogue's product → entitlement mapping, in grant's ENTITLEMENTS_PRODUCTS_FILE format.
        router.get("/sim/lifecycle/products") { request, _ -> Response in
            let bundleId = request.uri.queryParameters.get("bundleId") ?? runs.defaultBundleId
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: try SimulationCatalog.standard(bundleId: bundleId).productsFile())))
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try AppStoreJSON.encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
