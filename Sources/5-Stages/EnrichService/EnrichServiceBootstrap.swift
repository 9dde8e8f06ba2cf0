import AppStore
import AppStoreServerAPI
import AsyncHTTPClient
import LogKeys
import Logging
import NIOCore
import PipelineMessages
import ServiceLifecycle

/// Builds the stage and the HTTP client it owns, for the `enrich` executable and the benchmark.
public enum EnrichServiceBootstrap {
    /// The stage, and a service that shuts the HTTP client down after the stage has stopped (put it
    /// before the runner in the service group: shutdown runs in reverse order).
    public static func make(
        configuration: EnrichConfiguration, outputTopic: String, logger: Logger
    ) throws -> (EnrichStage, HTTPClientService) {
        var httpConfiguration = HTTPClient.Configuration()
        // Each lookup may hold two requests (history and status) at once.
        httpConfiguration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(8, configuration.concurrency * 2))
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfiguration)
        var api = configuration.api.forEnrich
        // A Sandbox burst is set aside rather than waited for beside Production records.
        api.client.rateLimits.sandboxMaximumWait = configuration.sandboxBudgetWait > .zero ? configuration.sandboxBudgetWait : nil
        let client = try api.makeClient(httpClient: http, logger: logger)
        // Nothing is spent until the runner says which part of the input this replica owns
        // (EnrichStage.ownershipChanged): a replica that just joined must not spend a whole budget.
        client.rateLimiter.setPart(0)
        logger.info(
            "App Store Server API client configured",
            metadata: [
                LogKey.appStoreApps: "\(client.bundleIds)", LogKey.appStoreBaseURL: "\(configuration.api.client.baseURLOverride ?? "Apple's hosts")",
                LogKey.appStoreRateScale: "\(api.client.rateLimits.scale)",
                LogKey.appStoreBudgetShare: "\(api.client.rateLimits.share)",
                LogKey.enrichSandboxBudgetWait: "\(configuration.sandboxBudgetWait)",
                LogKey.enrichCoalesce: "\(configuration.coalesce ? "on" : "off")",
                LogKey.enrichReplayCache: "\(configuration.caches.replayEntries)",
                LogKey.enrichLookupCacheTTL: "\(configuration.caches.lookupTimeToLive)",
                LogKey.enrichVerifiedJWSCache: "\(configuration.api.verifiedJWSCacheEntries)",
            ])
        if !configuration.api.additionalTrustedRoots.isEmpty {
            logger.notice("additional trusted roots configured for API answers; honoured for non-Production data only")
        }
        let stage = EnrichStage(
            lookup: PurchaseLookup(client: client), outputTopic: outputTopic, coalesce: configuration.coalesce,
            concurrency: configuration.concurrency, caches: configuration.caches, historyWait: configuration.historyWait,
            recordKeys: configuration.recordKeys, logger: logger)
        if let keys = configuration.recordKeys {
            logger.info("enriched records are signed", metadata: [LogKey.recordKeyID: "\(keys.keys[0].id)"])
        } else {
            logger.warning("RECORD_MAC_KEYS_FILE is not set: enriched records are not signed, and a grant that checks them refuses them")
        }
        return (stage, HTTPClientService(client: http))
    }
}

/// Keeps an `HTTPClient` alive while the group runs and shuts it down on graceful shutdown.
public struct HTTPClientService: Service {
    public let client: HTTPClient
    public init(client: HTTPClient) { self.client = client }
    public func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
