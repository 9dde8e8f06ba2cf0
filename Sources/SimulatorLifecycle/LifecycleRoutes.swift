import AppStore
import AppStoreSimulator
import Foundation
import Hummingbird
import LifecycleSimulation
import NIOCore

/// `POST /sim/lifecycle` starts playing simulated customers to a webhook; `GET /sim/lifecycle` shows
/// progress, the delivery report and each customer's expected entitlements (the ground truth).
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
        router.get("/sim/lifecycle") { _, _ in try Self.json(runs.status) }
        // The catalogue's product → entitlement mapping, in grant's ENTITLEMENTS_PRODUCTS_FILE format.
        router.get("/sim/lifecycle/products") { request, _ -> Response in
            let bundleID = request.uri.queryParameters.get("bundleId") ?? runs.defaultBundleID
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: try SimulationCatalog.standard(bundleID: bundleID).productsFile())))
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try AppStoreJSON.encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
