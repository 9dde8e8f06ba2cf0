import Hummingbird
import Logging
import NIOCore
import Prometheus

/// The routes every stage serves for operators: `/health` (the process is alive), `/ready`
/// (connected and not stuck) and `/metrics` (Prometheus text format).
public enum ProbeRoutes {
    /// Adds the three probe routes to a router. With `stage`, the gauge `pipeline_stage_ready{stage}`
    /// in `registry` says 1 when `/ready` would answer 200 and 0 otherwise; it is brought up to date
    /// by every `/ready` and every `/metrics` request, so each scrape sees the readiness of its moment.
    public static func add<Context: RequestContext>(
        to router: Router<Context>, registry: PrometheusCollectorRegistry, stage: String? = nil,
        isReady: @escaping @Sendable () -> Bool
    ) {
        let readyGauge = stage.map {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    metricName: "pipeline_stage_ready", unitName: "", helpText: "1 when the stage's /ready answers 200, else 0"),
                labels: [("stage", $0)])
        }
        let readiness: @Sendable () -> Bool = {
            let ready = isReady()
            readyGauge?.set(to: ready ? 1 : 0)
            return ready
        }
        router.get("/health") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        router.get("/ready") { _, _ in
            let ready = readiness()
            return Response(
                status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: ready ? #"{"status":"ready"}"# : #"{"status":"not_ready"}"#)))
        }
        router.get("/metrics") { _, _ in
            _ = readiness()
            var bytes: [UInt8] = []
            bytes.reserveCapacity(16 * 1024)
            registry.emit(into: &bytes)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
    }

    /// A small HTTP server with only the probe routes, for the stages that serve no other HTTP.
    /// `onServerRunning` is called once its port is bound.
    public static func server(
        host: String, port: Int, registry: PrometheusCollectorRegistry, stage: String? = nil, logger: Logger,
        onServerRunning: @escaping @Sendable () async -> Void = {}, isReady: @escaping @Sendable () -> Bool
    ) -> some ApplicationProtocol {
        let router = Router()
        add(to: router, registry: registry, stage: stage, isReady: isReady)
        return Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { _ in await onServerRunning() }, logger: logger)
    }
}
