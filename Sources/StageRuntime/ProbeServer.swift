import Hummingbird
import Logging
import NIOCore
import Prometheus

/// The routes every stage serves for operators: `/health` (the process is alive), `/ready`
/// (connected and not stuck) and `/metrics` (Prometheus text format).
public enum ProbeRoutes {
    /// Adds the three probe routes to a router.
    public static func add<Context: RequestContext>(
        to router: Router<Context>, registry: PrometheusCollectorRegistry, isReady: @escaping @Sendable () -> Bool
    ) {
        router.get("/health") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        router.get("/ready") { _, _ in
            let ready = isReady()
            return Response(
                status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: ready ? #"{"status":"ready"}"# : #"{"status":"not_ready"}"#)))
        }
        router.get("/metrics") { _, _ in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(16 * 1024)
            registry.emit(into: &bytes)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
    }

    /// A small HTTP server with only the probe routes, for the stages that serve no other HTTP.
    public static func server(
        host: String, port: Int, registry: PrometheusCollectorRegistry, logger: Logger,
        isReady: @escaping @Sendable () -> Bool
    ) -> some ApplicationProtocol {
        let router = Router()
        add(to: router, registry: registry, isReady: isReady)
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil), logger: logger)
    }
}
