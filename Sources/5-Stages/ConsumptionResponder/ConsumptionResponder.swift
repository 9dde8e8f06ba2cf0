import AppStore
import AppStoreServerAPI
import AsyncHTTPClient
import EntitlementStore
import Foundation
import LogKeys
import Logging
import Metrics
import ServiceLifecycle
import StageRuntime

/// Answers Apple's `CONSUMPTION_REQUEST`s for the apps that opted in: claims the pending requests
/// grant recorded, earliest deadline first, sends Send Consumption Information built by the
/// ``ConsumptionPolicy`` from our records, and records the outcome. Transient failures (429, 5xx,
/// the network) are retried with backoff while the 12-hour deadline allows; a request whose
/// deadline passed is marked expired and never sent late. Safe to run in every grant replica.
public final class ConsumptionResponder: Service, Sendable {
    let store: EntitlementStore
    let client: AppStoreServerAPIClient
    let policy: ConsumptionPolicy
    let pollInterval: Duration
    /// How long a claim keeps other responders away from a request.
    let lease: Duration
    let batchSize: Int
    let clock: @Sendable () -> Date
    let logger: Logger

    public init(
        store: EntitlementStore, client: AppStoreServerAPIClient, policy: ConsumptionPolicy, pollInterval: Duration = .seconds(2),
        lease: Duration = .seconds(120), batchSize: Int = 50, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.client = client
        self.policy = policy
        self.pollInterval = pollInterval
        self.lease = lease
        self.batchSize = batchSize
        self.logger = logger
        self.clock = clock
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var full = false
                do {
                    full = try await self.answerDue() == self.batchSize
                } catch {
                    self.logger.warning("consumption requests unavailable", error: error)
                }
                await self.reportBacklog()
                if !full { try? await Task.sleep(for: self.pollInterval) }
            }
        }
    }

    /// Claims the due requests once and answers each. Returns how many were claimed.
    @discardableResult
    public func answerDue() async throws(StoreError) -> Int {
        let claimed = try await store.claimConsumptionRequests(limit: batchSize, lease: lease)
        for request in claimed {
            let outcome = await answer(request)
            try await store.finishConsumptionRequest(request, outcome)
            record(outcome, request)
        }
        return claimed.count
    }

    /// Updates `consumption_requests_pending` and `consumption_request_deadline_seconds` (each poll).
    public func reportBacklog() async {
        do {
            GrantMetrics.consumption(try await store.consumptionBacklog(), now: clock())
        } catch {
            logger.debug("reading the consumption backlog failed", metadata: [LogKey.errorCode: "\(error.code)"])
        }
    }

    func answer(_ request: ConsumptionRequestRecord) async -> ConsumptionRequestOutcome {
        let now = clock()
        if let deadline = request.deadline, deadline <= now {
            return .expired(note: "Apple's deadline \(deadline) passed before an answer went out")
        }
        let transactionId: String
        let bundleId: String
        let body: ConsumptionRequest
        switch policy.decide(request) {
        case .skip(let reason): return .skipped(note: reason)
        case .send(let tid, let bundle, let request): (transactionId, bundleId, body) = (tid, bundle, request)
        }
        let environment = AppStoreEnvironment(rawValue: request.environment)
        guard environment == .sandbox || environment == .production else {
            return .skipped(note: "environment \(request.environment) has no App Store Server API")
        }
        do {
            try await client.sendConsumptionInformation(
                transactionId: transactionId, body, target: .init(bundleId: bundleId, environment: environment))
            let json = String(decoding: (try? AppStoreJSON.encoder.encode(body)) ?? Data("{}".utf8), as: UTF8.self)
            return .sent(body: json, deliveryStatus: body.deliveryStatus ?? "", refundPreference: body.refundPreference)
        } catch {
            guard error.isTransient else { return .failed(error: error.description) }
            return .retry(after: retryDelay(request, error: error, now: now), error: error.description)
        }
    }

    /// Apple's Retry-After, else exponential from 5 s up to 5 minutes; never past half the time left.
    func retryDelay(_ request: ConsumptionRequestRecord, error: AppStoreAPIError, now: Date) -> Duration {
        let backoff = error.retryAfter ?? .seconds(min(300, 5 << min(max(request.attempts - 1, 0), 6)))
        guard let deadline = request.deadline else { return backoff }
        let half = Duration.milliseconds(Int64(max(0, deadline.timeIntervalSince(now)) * 500))
        return min(backoff, max(half, .milliseconds(100)))
    }

    private func record(_ outcome: ConsumptionRequestOutcome, _ request: ConsumptionRequestRecord) {
        let name: String
        var metadata: Logger.Metadata = [
            LogKey.notificationUUID: "\(request.notificationUUID)", LogKey.transactionId: "\(request.transactionId ?? "-")",
            LogKey.attempt: "\(request.attempts)",
        ]
        switch outcome {
        case .sent(_, let delivery, let preference):
            name = "sent"
            metadata[LogKey.consumptionDelivery] = "\(delivery)"
            metadata[LogKey.consumptionRefundPreference] = "\(preference ?? "none")"
            logger.info("consumption information sent", metadata: metadata)
        case .retry(let after, let error):
            name = "retried"
            metadata[LogKey.error] = "\(error)"
            metadata[LogKey.retryIn] = "\(after)"
            logger.warning("consumption answer failed; will retry", metadata: metadata)
        case .failed(let error):
            name = "failed"
            metadata[LogKey.error] = "\(error)"
            logger.error("Apple refused the consumption answer", metadata: metadata)
        case .expired(let note):
            name = "expired"
            logger.error("consumption request expired unanswered", metadata: metadata.merging([LogKey.consumptionNote: "\(note)"]) { $1 })
        case .skipped(let note):
            name = "skipped"
            logger.info("consumption request not answered", metadata: metadata.merging([LogKey.consumptionNote: "\(note)"]) { $1 })
        }
        Counter(label: "consumption_answers_total", dimensions: [("outcome", name)]).increment()
    }
}

extension ConsumptionResponder {
    /// The responder over `store` as `configuration` says, its API client on the shared HTTP client.
    public static func make(configuration: ConsumptionConfiguration, store: EntitlementStore, logger: Logger) throws -> ConsumptionResponder {
        logger.info(
            "answering consumption requests", metadata: [LogKey.consumptionApps: "\(configuration.policy.apps.sorted().joined(separator: ","))"])
        return ConsumptionResponder(
            store: store, client: try configuration.makeClient(httpClient: HTTPClient.shared, logger: logger), policy: configuration.policy,
            pollInterval: configuration.pollInterval, logger: logger)
    }
}
