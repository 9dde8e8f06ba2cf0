import AppStore
import AppStoreServerAPI
import AsyncHTTPClient
import EntitlementStore
import Foundation
import LogKeys
import Logging
import Metrics
import ServiceLifecycle

/// Stamps Apple's `appAccountToken` on purchases that only an authenticated upload or receipt tied to
/// a customer (an old app's StoreKit 1 receipt, an offer code redeemed in the App Store), for the
/// apps that opted in: Set App Account Token, then `token_bindings` records who asked and what Apple
/// answered. From then on Apple's own notifications name the customer, so the purchase no longer
/// rests on the upload's claim. Apple's refusals are recorded and not repeated; transient failures
/// (429, 5xx, the network) wait for the next poll. Safe in every grant replica: two may stamp one
/// purchase, with the same token.
public final class TokenStamper: Service, Sendable {
    public static let requestedBy = "grant:auto-stamp"
    let store: EntitlementStore
    let client: AppStoreServerAPIClient
    let apps: [String]
    let pollInterval: Duration
    let batchSize: Int
    let logger: Logger

    public init(
        store: EntitlementStore, client: AppStoreServerAPIClient, apps: Set<String>, pollInterval: Duration = .seconds(2), batchSize: Int = 50,
        logger: Logger
    ) {
        self.store = store
        self.client = client
        self.apps = apps.sorted()
        self.pollInterval = pollInterval
        self.batchSize = batchSize
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var full = false
                do {
                    full = try await self.stampDue() == self.batchSize
                } catch {
                    self.logger.warning("purchases to stamp unavailable", metadata: [LogKey.error: "\(error)"])
                }
                if !full { try? await Task.sleep(for: self.pollInterval) }
            }
        }
    }

    /// What one stamp came to.
    public enum Outcome: String, Sendable {
        case set
        case refused
        /// Not recorded: asked again at the next poll.
        case retry
    }

    /// Stamps the purchases due once; returns how many were asked about (a transient failure ends
    /// the round early, so a rate-limited Apple is not hammered).
    @discardableResult
    public func stampDue() async throws(StoreError) -> Int {
        let due = try await store.unstampedPurchases(apps: apps, limit: batchSize)
        for purchase in due {
            let outcome = await stamp(purchase)
            Counter(label: "token_stamps_total", dimensions: [("outcome", outcome.rawValue)]).increment()
            if outcome == .retry { break }
        }
        return due.count
    }

    func stamp(_ purchase: UnstampedPurchase) async -> Outcome {
        let environment = AppStoreEnvironment(rawValue: purchase.environment)
        let metadata: Logger.Metadata = [
            LogKey.originalTransactionId: "\(purchase.originalTransactionId)", LogKey.customerId: "\(purchase.customerId.uuidString.lowercased())",
        ]
        let answer = await setToken(purchase, target: .init(bundleId: purchase.bundleId, environment: environment))
        do {
            switch answer {
            case .success:
                try await store.recordTokenBinding(purchase, requestedBy: Self.requestedBy, outcome: "set", appleError: nil)
                logger.info("appAccountToken stamped at Apple", metadata: metadata)
                return .set
            case .failure(let error) where error.isTransient:
                logger.warning(
                    "stamping the appAccountToken failed; will retry", metadata: metadata.merging([LogKey.errorCode: "\(error.code.rawValue)"]) { $1 }
                )
                return .retry
            case .failure(let error):
                try await store.recordTokenBinding(purchase, requestedBy: Self.requestedBy, outcome: "refused", appleError: error.code.rawValue)
                logger.error(
                    "Apple refused to stamp the appAccountToken", metadata: metadata.merging([LogKey.errorCode: "\(error.code.rawValue)"]) { $1 })
                return .refused
            }
        } catch {
            logger.warning("recording the stamp failed; will ask again", metadata: metadata.merging([LogKey.error: "\(error)"]) { $1 })
            return .retry
        }
    }

    private func setToken(_ purchase: UnstampedPurchase, target: AppStoreServerAPIClient.Target) async -> Result<Void, AppStoreAPIError> {
        do {
            try await client.setAppAccountToken(
                originalTransactionId: purchase.originalTransactionId, appAccountToken: purchase.customerId, target: target)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}

extension TokenStamper {
    /// The stamper over `store` as `configuration` says, its API client on the shared HTTP client.
    public static func make(configuration: TokenStampConfiguration, store: EntitlementStore, logger: Logger) throws -> TokenStamper {
        logger.info(
            "stamping appAccountTokens on upload-owned purchases",
            metadata: [LogKey.tokenStampApps: "\(configuration.apps.sorted().joined(separator: ","))"])
        return TokenStamper(
            store: store, client: try configuration.api.makeClient(httpClient: HTTPClient.shared, logger: logger), apps: configuration.apps,
            pollInterval: configuration.pollInterval, logger: logger)
    }
}
