// swift-tools-version: 6.2
import PackageDescription

// The layer map, stated once, in `targets` below: each `layer` is a folder `Sources/<n>-<Layer>`,
// lowest first, and a library target may import only targets of a lower layer (so no stage imports
// another); besides, the store never imports the stage runtime. deploy/checks/check_layers.py reads
// the folders from `swift package dump-package`. Executables and tests sit above every layer.

/// `targets` with their sources in `Sources/<folder>/<name>`: the folder is the layer.
func layer(_ folder: String, _ targets: [Target]) -> [Target] {
    for target in targets { target.path = "Sources/\(folder)/\(target.name)" }
    return targets
}

// Every Swift target is built with these (set once, after the targets, at the end).
let swiftSettings: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]

// The external products targets use, named once.
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let configuration: Target.Dependency = .product(name: "Configuration", package: "swift-configuration")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let cryptoExtras: Target.Dependency = .product(name: "_CryptoExtras", package: "swift-crypto")
let dequeModule: Target.Dependency = .product(name: "DequeModule", package: "swift-collections")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let hummingbirdTesting: Target.Dependency = .product(name: "HummingbirdTesting", package: "hummingbird")
let inMemoryTracing: Target.Dependency = .product(name: "InMemoryTracing", package: "swift-distributed-tracing")
let instrumentation: Target.Dependency = .product(name: "Instrumentation", package: "swift-distributed-tracing")
let jwtKit: Target.Dependency = .product(name: "JWTKit", package: "jwt-kit")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioSSL: Target.Dependency = .product(name: "NIOSSL", package: "swift-nio-ssl")
let otel: Target.Dependency = .product(name: "OTel", package: "swift-otel")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let prometheus: Target.Dependency = .product(name: "Prometheus", package: "swift-prometheus")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let swiftASN1: Target.Dependency = .product(name: "SwiftASN1", package: "swift-asn1")
let tracing: Target.Dependency = .product(name: "Tracing", package: "swift-distributed-tracing")
let unixSignals: Target.Dependency = .product(name: "UnixSignals", package: "swift-service-lifecycle")
let w3cTraceContext: Target.Dependency = .product(name: "W3CTraceContext", package: "swift-w3c-trace-context")
let x509: Target.Dependency = .product(name: "X509", package: "swift-certificates")
let subprocess: Target.Dependency = .product(name: "Subprocess", package: "swift-subprocess")  // TestSupport only: children awaited by pid
let systemPackage: Target.Dependency = .product(name: "SystemPackage", package: "swift-system", condition: .when(platforms: [.linux]))

let package = Package(
    name: "AppStoreEntitlements",
    platforms: [.macOS(.v15)],
    // Every executable is a product of the same name.
    products: [
        "ingest", "stage-relay", "loadgen", "verify", "appstorectl", "verify-bench", "appstore-sim", "enrich", "enrich-bench", "grant", "grant-bench",
    ].map { .executable(name: $0, targets: [$0]) },
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-configuration.git", exact: "1.4.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-w3c-trace-context.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),  // no gRPC: half the cold build
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
    ],
    targets:
        // ─── Layer 0, Sources/0-Base: the JSON reader and writer, configuration, log keys, error classification.
        layer(
            "0-Base",
            [
                // The project's JSON reader (strict parser, tree decoder, direct readers for hot models) and
                // writer (one-pass streaming encoder), and strict base64: no dependencies, below every model.
                .target(name: "JSONCoding"),
                // Settings declared once (name, default, meaning, secrecy) and read through swift-configuration
                // from the environment: none of our modules below it, so every layer (the store, the API
                // client, the stages) reads its settings the same way.
                .target(name: "EnvironmentSettings", dependencies: [configuration]),
                // The metadata keys every process logs with, named once (`<area>.<name>`).
                .target(name: "LogKeys"),
                // How an error tells the stage runtime what to do with its record (ClassifiedError, StageError):
                // below the runtime, so the store and the API client classify their errors without importing it.
                .target(name: "ErrorClassification"),
            ])
        // ─── Layer 1, Sources/1-Foundations: librdkafka's C API, the enqueue hook, event-loop timers, Apple's signed data, tracing.
        + layer(
            "1-Foundations",
            [
                // librdkafka, found through pkg-config; the only place its C API is visible.
                .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka", providers: [.apt(["librdkafka-dev"])]),
                // The Swift runtime's global-enqueue hook, so the stage runtime can run tasks on NIO's event
                // loops; the only place that hook is visible.
                .target(name: "CTaskExecutorHook"),
                // Timers on NIO's event loops, for the hot path's deadlines and gather windows (Task.sleep's
                // are Dispatch's, and wake a thread of their own).
                .target(name: "EventLoopTimers", dependencies: [nioCore, nioPosix]),
                // Apple's signed data: typed models, the JWS / X.509 verifier, and the inspection behind
                // `appstorectl inspect`.
                .target(name: "AppStore", dependencies: ["JSONCoding", "EnvironmentSettings", x509, swiftASN1, crypto, cryptoExtras]),
                // Distributed tracing for every process: W3C trace context checked strictly, swift-otel's
                // tracer and exporter installed when OpenTelemetry's variables ask for it, span names and
                // attributes after OpenTelemetry's semantic conventions.
                .target(name: "PipelineTracing", dependencies: [instrumentation, logging, otel, serviceLifecycle, tracing, w3cTraceContext]),
            ])
        // ─── Layer 2, Sources/2-Clients: the Kafka client, signing, the App Store Server API client, the records, simulated customers.
        + layer(
            "2-Clients",
            [
                // Swift wrapper over librdkafka: producer, consumer, admin; headers carry trace context.
                .target(
                    name: "KafkaClient",
                    dependencies: ["LogKeys", "CRdKafka", "EventLoopTimers", dequeModule, instrumentation, logging, serviceLifecycle]),
                // A local App Store signing authority: creates a test CA (root and intermediate P-384, leaf
                // P-256, Apple's marker extensions) and signs JWS with it. Used by tests and the simulator.
                .target(name: "AppStoreSigning", dependencies: ["AppStore", "JSONCoding", x509, swiftASN1, crypto]),
                // Offer signatures for StoreKit with the app's In-App Purchase key: promotional offers the
                // original way (ECDSA over Apple's separator-joined message) and the JWS of promotional
                // offers and introductory-offer eligibility; their settings. Used by ingest and appstorectl.
                .target(name: "OfferSigning", dependencies: ["EnvironmentSettings", "JSONCoding", crypto]),
                // The App Store Server API client: ES256 request tokens from the .p8 key, every endpoint the
                // pipeline and the operator tool need, every returned JWS verified, Apple's error codes as
                // typed errors, a per-key rate limiter. Free of the stage runtime so the operator tool reuses it.
                .target(
                    name: "AppStoreServerAPI",
                    dependencies: [
                        "LogKeys", "ErrorClassification", "AppStore", "EnvironmentSettings", "JSONCoding", asyncHTTPClient, nioCore, nioHTTP1, crypto,
                        logging, metrics,
                    ]
                ),
                // The bodies that travel between stages (verified, enriched), shared by their producers and
                // consumers so a stage never depends on another stage's code.
                .target(name: "PipelineRecords", dependencies: ["AppStore", "JSONCoding", crypto]),
                // Customers' purchase lifecycles as Apple records them (renewals, plan changes, billing
                // retry, refunds, …) on a compressed clock, with the entitlements each customer should end
                // with: what the simulated Apple plays, and the ground truth end-to-end runs compare against.
                .target(name: "SimulatedCustomers", dependencies: ["AppStore"]),
            ])
        // ─── Layer 3, Sources/3-Runtime: the stage runtime, the record builders, the pure grant decision, the simulated Apple.
        + layer(
            "3-Runtime",
            [
                // The consume → process → produce → commit loop shared by every stage, with retries,
                // dead-lettering, metrics, probes and typed configuration.
                .target(
                    name: "StageRuntime",
                    dependencies: [
                        "LogKeys", "ErrorClassification", "CTaskExecutorHook", "EnvironmentSettings", "EventLoopTimers", "KafkaClient",
                        "PipelineRecords", "PipelineTracing", dequeModule, logging, metrics, prometheus, serviceLifecycle, tracing, unixSignals,
                        hummingbird, nioCore, nioPosix,
                    ]
                ),
                // One builder per record kind (raw, verified, enriched: key, headers, body), used by every
                // producer of it: the stages, the operator jobs, the benchmarks.
                .target(name: "PipelineMessages", dependencies: ["PipelineRecords", "KafkaClient", "EnvironmentSettings", crypto]),
                // Grant's pure decision: (purchase state, enriched event) → (new state, entitlement changes).
                // No I/O, no Postgres: table-tested for every notification type × subtype × product type.
                .target(name: "GrantDecision", dependencies: ["AppStore", "PipelineRecords"]),
                // A simulated Apple (Sandbox only): the API's endpoints over an in-memory model of customers
                // and purchases, JWS signed by a local test CA, bearer tokens checked like Apple, fault injection.
                .target(
                    name: "AppStoreSimulator",
                    dependencies: [
                        "AppStore", "AppStoreSigning", "AppStoreServerAPI", "JSONCoding", asyncHTTPClient, nioHTTP1, hummingbird,
                        x509, swiftASN1, crypto, logging, nioCore,
                    ]
                ),
                // Delivers simulated lifecycles like Apple: records changed in time order, each notification
                // signed and POSTed to the webhook with Apple's retries, duplicates, delays, reordering, losses.
                .target(
                    name: "SimulatedDelivery",
                    dependencies: ["AppStore", "JSONCoding", "SimulatedCustomers", asyncHTTPClient, nioCore, nioHTTP1]
                ),
            ])
        // ─── Layer 4, Sources/4-Store: the entitlement store (Postgres), operations on topics and groups, the simulator's routes.
        + layer(
            "4-Store",
            [
                // Grant's Postgres side: migrations runner, batch apply in one transaction (idempotent,
                // order-safe), change history and outbox with gap-free per-customer sequence numbers.
                .target(
                    name: "EntitlementStore",
                    dependencies: [
                        "LogKeys", "ErrorClassification", "EnvironmentSettings", "EventLoopTimers", "GrantDecision", "AppStore", "JSONCoding",
                        "PipelineRecords", "PipelineTracing",
                        postgresNIO, nioSSL, crypto, logging, metrics, tracing,
                    ]
                ),
                // The operator jobs behind appstorectl that only need the broker: replaying a stage from a
                // point, and listing, showing and re-injecting dead letters.
                .target(name: "PipelineOperations", dependencies: ["PipelineRecords", "KafkaClient"]),
                // The simulated Apple plays lifecycles: the player's records over the simulator's store, and
                // POST/GET /sim/lifecycle (start a run to a webhook; progress and ground truth).
                .target(
                    name: "SimulatorLifecycleRoutes",
                    dependencies: [
                        "AppStore", "AppStoreSimulator", "SimulatedDelivery", "SimulatedCustomers", asyncHTTPClient,
                        hummingbird, nioCore,
                    ]
                ),
            ])
        // ─── Layer 5, Sources/5-Stages: the stages and the recovery jobs, side by side (none imports another).
        + layer(
            "5-Stages",
            [
                // The webhook front door: HTTP in, raw topic out; app uploads authenticated (JWT or HMAC).
                .target(
                    name: "IngestService",
                    dependencies: [
                        "LogKeys", "PipelineMessages", "PipelineRecords", "OfferSigning",
                        "EnvironmentSettings", "AppStore", "JSONCoding", "KafkaClient", "PipelineTracing", "StageRuntime", hummingbird, crypto,
                        jwtKit,
                        asyncHTTPClient, nioHTTP1, logging, tracing, x509, swiftASN1,
                    ]
                ),
                // The verify stage: raw records in, verified notifications out (JWS and X.509 checks, decoding,
                // re-keying by originalTransactionId).
                .target(
                    name: "VerifyService",
                    dependencies: [
                        "LogKeys", "ErrorClassification", "PipelineMessages",
                        "EnvironmentSettings", "AppStore", "PipelineRecords", "StageRuntime", "KafkaClient", logging, metrics, x509, swiftASN1,
                        asyncHTTPClient, nioCore, nioHTTP1,
                    ]
                ),
                // The enrich stage: verified records in, each purchase's history and subscription status from
                // the API out (coalesced per originalTransactionId within a batch), API failures classified.
                .target(
                    name: "EnrichService",
                    dependencies: [
                        "LogKeys", "ErrorClassification", "PipelineMessages", "EnvironmentSettings", "AppStore", "AppStoreServerAPI",
                        "PipelineRecords",
                        "StageRuntime", "KafkaClient",
                        asyncHTTPClient, nioCore, logging, metrics, serviceLifecycle,
                    ]
                ),
                // The grant stage: enriched records → EntitlementStore; the outbox publisher; configuration.
                .target(
                    name: "GrantService",
                    dependencies: [
                        "LogKeys", "ErrorClassification", "EnvironmentSettings", "EntitlementStore", "EventLoopTimers", "GrantDecision",
                        "PipelineMessages",
                        "PipelineRecords", "StageRuntime",
                        "KafkaClient", "PipelineTracing", postgresNIO, logging, serviceLifecycle, tracing,
                    ]
                ),
                // Answers Apple's CONSUMPTION_REQUESTs from grant's records for the apps that opted in.
                .target(
                    name: "ConsumptionResponder",
                    dependencies: [
                        "LogKeys", "EnvironmentSettings", "EntitlementStore", "AppStore", "AppStoreServerAPI", "StageRuntime",
                        asyncHTTPClient, logging, metrics, serviceLifecycle,
                    ]
                ),
                // Stamps Apple's appAccountToken on purchases only an upload or receipt tied to a customer,
                // for the apps that opted in (TOKEN_STAMP_APPS).
                .target(
                    name: "TokenStamping",
                    dependencies: [
                        "LogKeys", "EnvironmentSettings", "EntitlementStore", "AppStore", "AppStoreServerAPI", asyncHTTPClient, logging, metrics,
                        serviceLifecycle,
                    ]
                ),
                // The operator jobs behind appstorectl that need Apple's API or the entitlements database:
                // backfill from notification history, reconcile overdue subscriptions, look up an order,
                // follow a test notification, and the read-only customer report.
                .target(
                    name: "RecoveryJobs",
                    dependencies: [
                        "PipelineMessages", "AppStore", "AppStoreServerAPI", "PipelineOperations", "PipelineRecords", "KafkaClient", postgresNIO,
                        crypto, logging,
                    ]
                ),
            ])
        // ─── Layer 6, Sources/6-Tools: the operator tool's commands, the grant workload; above every stage, so no stage imports them.
        + layer(
            "6-Tools",
            [
                // The enriched events grant is measured and tested with: simulated Apple purchases and
                // deterministic customer lifecycles. Under Sources so grant-bench may import it; above every
                // stage (check_layers.py) so no stage can.
                .target(
                    name: "GrantWorkload",
                    dependencies: ["AppStore", "GrantDecision", "EntitlementStore", "PipelineRecords", "SimulatedCustomers", postgresNIO, logging]
                ),
                // The operator tool's commands (appstorectl): inspect, migrate, replay, dead letters, backfill,
                // reconcile, refunds, lookup-order, customer, extensions, topics, offers. A library, so its
                // parsing and validation are tested in process; the executable only calls AppStoreCtl.main().
                .target(
                    name: "OperatorCommands",
                    dependencies: [
                        "AppStore", "AppStoreServerAPI", "EnrichService", "EntitlementStore", "EnvironmentSettings", "GrantService", "KafkaClient",
                        "OfferSigning", "PipelineOperations", "PipelineRecords", "RecoveryJobs", "StageRuntime", "VerifyService", argumentParser,
                        asyncHTTPClient, logging, postgresNIO, x509,
                    ]
                ),
            ])
        // ─── Sources/Executables: thin mains over the layers (each may import any layer).
        + [
            .executableTarget(
                name: "ingest",
                dependencies: ["LogKeys", "EnvironmentSettings", "IngestService", asyncHTTPClient],
                path: "Sources/Executables/ingest"
            ),
            // A stage that copies its input to its output through the runtime: used by the crash and
            // throughput tests, and by operators to check a cluster end to end.
            .executableTarget(name: "stage-relay", dependencies: ["StageRuntime"], path: "Sources/Executables/stage-relay"),
            // HTTP load generator for the benchmarks and the crash test (closed- and open-loop).
            .executableTarget(
                name: "loadgen",
                dependencies: [asyncHTTPClient, argumentParser, nioCore, nioHTTP1],
                path: "Sources/Executables/loadgen"
            ),
            .executableTarget(
                name: "verify", dependencies: ["PipelineRecords", "VerifyService", "StageRuntime"], path: "Sources/Executables/verify"),
            // The operator tool (OperatorCommands).
            .executableTarget(name: "appstorectl", dependencies: ["OperatorCommands"], path: "Sources/Executables/appstorectl"),
            // Verification throughput on one core, warm and cold chain cache (deploy/local/bench verify).
            .executableTarget(
                name: "verify-bench",
                dependencies: ["AppStore", "AppStoreSigning", "JSONCoding", x509, crypto],
                path: "Sources/Executables/verify-bench"
            ),
            .executableTarget(
                name: "appstore-sim",
                dependencies: [
                    "LogKeys", "EnvironmentSettings", "AppStoreSimulator", "SimulatorLifecycleRoutes", "StageRuntime", asyncHTTPClient, nioSSL,
                ],
                path: "Sources/Executables/appstore-sim"
            ),
            .executableTarget(
                name: "enrich", dependencies: ["PipelineRecords", "EnrichService", "StageRuntime"], path: "Sources/Executables/enrich"),
            // Enrich throughput against the simulator on loopback, coalescing on and off
            // (deploy/local/bench enrich): the real stage on the real broker.
            .executableTarget(
                name: "enrich-bench",
                dependencies: [
                    "EnrichService", "AppStoreSimulator", "AppStoreServerAPI", "AppStoreSigning", "AppStore",
                    "PipelineRecords", "StageRuntime", "KafkaClient", asyncHTTPClient, crypto, serviceLifecycle, logging,
                ],
                path: "Sources/Executables/enrich-bench"
            ),
            .executableTarget(
                name: "grant",
                dependencies: ["PipelineRecords", "GrantService", "ConsumptionResponder", "TokenStamping", "StageRuntime"],
                path: "Sources/Executables/grant"
            ),
            // Grant's database throughput with batching on and off (deploy/local/bench grant), and the
            // enriched events bench e2e replays through the grant process.
            .executableTarget(
                name: "grant-bench",
                dependencies: [
                    "PipelineMessages", "EnvironmentSettings", "EntitlementStore", "GrantDecision", "GrantWorkload", "PipelineRecords",
                    "StageRuntime",
                    "KafkaClient", "AppStore", postgresNIO, logging,
                ],
                path: "Sources/Executables/grant-bench"
            ),
        ]
        // ─── Tests/: the test targets and their support.
        + [
            .testTarget(name: "JSONCodingTests", dependencies: ["JSONCoding", "TestSupport"]),
            .testTarget(name: "OfferSigningTests", dependencies: ["OfferSigning", "EnvironmentSettings", "JSONCoding", "TestSupport", crypto]),
            // What the test targets share, each defined once: the local stack and built executables,
            // test PKI and sample App Store data, a simulated Apple on loopback, seeded randomness.
            .target(
                name: "TestSupport",
                dependencies: [
                    "KafkaClient", "StageRuntime", "AppStore", "AppStoreSigning", "AppStoreServerAPI", "AppStoreSimulator",
                    "SimulatedCustomers", serviceLifecycle, logging, jwtKit, crypto, cryptoExtras, asyncHTTPClient, hummingbird, x509, swiftASN1,
                    nioCore, subprocess, systemPackage,  // SystemPackage: Linux's FilePath (macOS's is in the SDK)
                ],
                path: "Tests/TestSupport"
            ),
            .testTarget(
                name: "PipelineRecordsTests",
                dependencies: [
                    "AppStore", "JSONCoding", "PipelineRecords", "PipelineMessages", "KafkaClient", "GrantWorkload", "TestSupport",
                    "EnvironmentSettings", crypto,
                ]
            ),
            .testTarget(name: "KafkaClientTests", dependencies: ["KafkaClient", "TestSupport"]),
            .testTarget(
                name: "StageRuntimeTests",
                dependencies: [
                    "LogKeys", "ErrorClassification", "PipelineRecords",
                    "EnvironmentSettings", "EventLoopTimers", "StageRuntime", "KafkaClient", "TestSupport", hummingbirdTesting, serviceLifecycle,
                    prometheus, metrics, inMemoryTracing, otel, "PipelineTracing", tracing,
                ]
            ),
            .testTarget(
                name: "IngestTests",
                dependencies: [
                    "LogKeys", "PipelineRecords", "EnvironmentSettings", "IngestService", "StageRuntime", "KafkaClient", "TestSupport", "AppStore",
                    "AppStoreSigning", "AppStoreSimulator", "OfferSigning", "PipelineTracing", hummingbirdTesting,
                    asyncHTTPClient, nioCore, nioHTTP1, hummingbird, jwtKit, crypto, logging, metrics, prometheus,
                ]
            ),
            // Crash, restart and outage tests: run alone (see ResilienceSuite.swift).
            .testTarget(
                name: "ResilienceTests",
                dependencies: [
                    "EnvironmentSettings", "IngestService", "KafkaClient", "TestSupport", "GrantService", "EntitlementStore",
                    "GrantDecision", "GrantTestSupport", "GrantWorkload", "PipelineRecords", "StageRuntime", serviceLifecycle,
                    hummingbirdTesting, asyncHTTPClient,
                ]
            ),
            .testTarget(
                name: "AppStoreTests",
                dependencies: ["AppStore", "AppStoreSigning", "AppStoreSimulator", "JSONCoding", "TestSupport", swiftASN1]
            ),
            .testTarget(
                name: "SimulatedCustomerTests",
                dependencies: [
                    "SimulatedCustomers", "SimulatedDelivery", "AppStore", "AppStoreSigning", "AppStoreSimulator",
                    "SimulatorLifecycleRoutes", "AppStoreServerAPI", "TestSupport", asyncHTTPClient, crypto, hummingbird, hummingbirdTesting, nioCore,
                ]
            ),
            .testTarget(
                name: "PipelineOperationsTests",
                dependencies: ["ErrorClassification", "PipelineRecords", "PipelineOperations", "KafkaClient", "StageRuntime", "TestSupport"]
            ),
            .testTarget(
                name: "RecoveryJobsTests",
                dependencies: [
                    "EnvironmentSettings", "RecoveryJobs", "ConsumptionResponder", "TokenStamping", "AppStore", "AppStoreServerAPI",
                    "AppStoreSimulator",
                    "AppStoreSigning", "PipelineRecords", "KafkaClient", "StageRuntime", "TestSupport", "GrantTestSupport",
                    "GrantWorkload", "EntitlementStore", asyncHTTPClient, crypto, postgresNIO, serviceLifecycle, logging,
                ]
            ),
            .testTarget(
                name: "EnrichTests",
                dependencies: [
                    "EnvironmentSettings", "EnrichService", "AppStoreServerAPI", "AppStoreSimulator", "AppStoreSigning", "AppStore",
                    "JSONCoding", "PipelineRecords", "StageRuntime", "KafkaClient", "TestSupport", "GrantDecision", "GrantTestSupport",
                    asyncHTTPClient, hummingbird,
                    nioCore, nioHTTP1, crypto, logging, serviceLifecycle,
                ]
            ),
            // Grant's test helpers: an in-memory ledger, a scratch Postgres database per suite.
            .target(
                name: "GrantTestSupport",
                dependencies: [
                    "GrantDecision", "GrantWorkload", "EntitlementStore", "AppStore", "PipelineRecords", "SimulatedCustomers",
                    "StageRuntime", "TestSupport", postgresNIO, logging,
                ],
                path: "Tests/GrantTestSupport"
            ),
            .testTarget(
                name: "GrantDecisionTests",
                dependencies: ["GrantDecision", "GrantTestSupport", "GrantWorkload", "AppStore", "PipelineRecords"]
            ),
            // Against the local Postgres (deploy/local/up): migrations, idempotency, order, refunds,
            // ownership, the outbox; and the grant stage on the real broker.
            .testTarget(
                name: "GrantStoreTests",
                dependencies: [
                    "EnvironmentSettings", "GrantService", "EntitlementStore", "GrantDecision", "GrantTestSupport", "GrantWorkload", "AppStore",
                    "PipelineRecords", "StageRuntime", "KafkaClient", "TestSupport", postgresNIO, logging,
                    serviceLifecycle, metrics, prometheus,
                ]
            ),
            // The whole pipeline as processes (appstore-sim, ingest, verify, enrich, grant) on the real broker
            // and Postgres, compared with the simulator's ground truth.
            .testTarget(
                name: "EndToEndTests",
                dependencies: [
                    "PipelineRecords", "AppStore", "AppStoreSigning", "AppStoreSimulator", "SimulatorLifecycleRoutes", "SimulatedCustomers",
                    "SimulatedDelivery", "EntitlementStore", "GrantTestSupport", "GrantWorkload", "KafkaClient", "StageRuntime",
                    "TestSupport", "PipelineOperations", "PipelineMessages", asyncHTTPClient, postgresNIO, nioCore, nioHTTP1, logging,
                ]
            ),
            // appstorectl's parsing, validation and exit statuses, in process.
            .testTarget(name: "OperatorCommandsTests", dependencies: ["OperatorCommands", argumentParser]),
            .testTarget(
                name: "VerifyTests",
                dependencies: [
                    "EnvironmentSettings", "VerifyService", "PipelineRecords", "AppStore", "AppStoreSigning", "AppStoreSimulator", "StageRuntime",
                    "KafkaClient", "TestSupport", "IngestService", x509, swiftASN1, crypto, hummingbirdTesting, serviceLifecycle, asyncHTTPClient,
                    nioCore, nioHTTP1,
                ]
            ),
        ]
)

// The C targets (librdkafka's system library, the executor hook) take no Swift settings.
for target in package.targets where !["CRdKafka", "CTaskExecutorHook"].contains(target.name) {
    target.swiftSettings = swiftSettings
}
