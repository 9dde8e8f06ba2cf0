import AppStore
import AppStoreServerAPI
import Foundation
import Logging
import PipelineOperations
import PostgresNIO

/// What one `appstorectl extend-all` asked and Apple answered.
public struct MassRenewalExtensionRequest: Sendable, Hashable, OperatorJSONObject {
    public var environment: String
    public var bundleId: String
    public var productId: String
    public var requestIdentifier: String
    public var storefrontCountryCodes: [String]?
    public var extendByDays: Int
    public var reasonCode: Int
    public var requestedBy: String

    public init(
        environment: String, bundleId: String, productId: String, requestIdentifier: String, storefrontCountryCodes: [String]? = nil,
        extendByDays: Int, reasonCode: Int, requestedBy: String
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.productId = productId
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.extendByDays = extendByDays
        self.reasonCode = reasonCode
        self.requestedBy = requestedBy
    }
}

/// A mass extension as Apple and the pipeline see it (`appstorectl extend-status`).
public struct MassRenewalExtensionStatus: Sendable, Hashable, OperatorJSONObject {
    public var environment: String
    public var bundleId: String
    public var productId: String
    public var requestIdentifier: String
    public var storefrontCountryCodes: [String]?
    public var extendByDays: Int
    public var reasonCode: Int
    public var requestedBy: String
    public var requestedAt: Date
    /// `pending` (not answered yet), `accepted` or `refused`.
    public var appleOutcome: String
    public var appleError: String?
    /// Apple's status endpoint, when asked and the request was accepted.
    public var appleComplete: Bool?
    public var appleCompleteDate: Date?
    public var appleSucceededCount: Int64?
    public var appleFailedCount: Int64?
    /// What `RENEWAL_EXTENSION/SUMMARY` reported (nil until it arrived).
    public var reportedComplete: Date?
    public var reportedSucceededCount: Int64?
    public var reportedFailedCount: Int64?
    /// The subscriptions `RENEWAL_EXTENSION/FAILURE` named, by original transaction ID.
    public var failedOriginalTransactionIds: [String]

    public init(
        environment: String, bundleId: String, productId: String, requestIdentifier: String, storefrontCountryCodes: [String]? = nil,
        extendByDays: Int, reasonCode: Int, requestedBy: String, requestedAt: Date, appleOutcome: String, appleError: String? = nil,
        appleComplete: Bool? = nil, appleCompleteDate: Date? = nil, appleSucceededCount: Int64? = nil, appleFailedCount: Int64? = nil,
        reportedComplete: Date? = nil, reportedSucceededCount: Int64? = nil, reportedFailedCount: Int64? = nil,
        failedOriginalTransactionIds: [String] = []
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.productId = productId
        self.requestIdentifier = requestIdentifier
        self.storefrontCountryCodes = storefrontCountryCodes
        self.extendByDays = extendByDays
        self.reasonCode = reasonCode
        self.requestedBy = requestedBy
        self.requestedAt = requestedAt
        self.appleOutcome = appleOutcome
        self.appleError = appleError
        self.appleComplete = appleComplete
        self.appleCompleteDate = appleCompleteDate
        self.appleSucceededCount = appleSucceededCount
        self.appleFailedCount = appleFailedCount
        self.reportedComplete = reportedComplete
        self.reportedSucceededCount = reportedSucceededCount
        self.reportedFailedCount = reportedFailedCount
        self.failedOriginalTransactionIds = failedOriginalTransactionIds
    }

    /// Finished once its summary was recorded.
    public var isOpen: Bool { appleOutcome != "refused" && reportedComplete == nil }
}

/// `appstorectl extend-all` and `extend-status`: Apple's mass renewal-date extension of every active
/// subscriber of a product, recorded in `mass_renewal_extensions` (migration 0017) before Apple is
/// asked and with Apple's answer after; grant records what Apple reports when it is done
/// (`RENEWAL_EXTENSION/SUMMARY` and `/FAILURE`). Nothing is fed: each extended subscription's own
/// `RENEWAL_EXTENDED` notification moves its end.
public struct MassRenewalExtensionJob: Sendable {
    public let client: AppStoreServerAPIClient
    public let database: PostgresClient
    public let logger: Logger

    public init(client: AppStoreServerAPIClient, database: PostgresClient, logger: Logger) {
        self.client = client
        self.database = database
        self.logger = logger
    }

    /// Records the request, asks Apple, records Apple's answer.
    /// - Throws: ``OperationsError`` (`api.*` when Apple refused, `store.unavailable` when recording failed).
    public func extendAll(_ request: MassRenewalExtensionRequest, target: AppStoreServerAPIClient.Target) async throws(OperationsError) {
        let r = request
        try await execute(
            """
            INSERT INTO mass_renewal_extensions (environment, request_identifier, bundle_id, product_id, storefront_country_codes,
                extend_by_days, reason_code, requested_by)
            VALUES (\(r.environment), \(r.requestIdentifier), \(r.bundleId), \(r.productId), \(r.storefrontCountryCodes),
                \(r.extendByDays), \(Int16(r.reasonCode)), \(r.requestedBy))
            ON CONFLICT (environment, request_identifier) DO NOTHING
            """, "recording the mass extension request")
        let body = MassExtendRenewalDateRequest(
            extendByDays: Int32(r.extendByDays), extendReasonCode: Int32(r.reasonCode), requestIdentifier: r.requestIdentifier,
            storefrontCountryCodes: r.storefrontCountryCodes, productId: r.productId)
        do {
            _ = try await client.massExtendRenewalDate(body, target: target)
        } catch {
            try await answer(r, outcome: "refused", appleError: error.code.rawValue)
            throw OperationsError.api(error)
        }
        try await answer(r, outcome: "accepted", appleError: nil)
    }

    /// Polls Apple's status endpoint every `interval` until Apple says the request is complete, or
    /// `patience` passed; returns Apple's last answer.
    /// - Throws: ``OperationsError`` (`api.*` when Apple's status endpoint failed).
    public func waitUntilComplete(
        _ request: MassRenewalExtensionRequest, target: AppStoreServerAPIClient.Target, interval: Duration = .seconds(1), patience: Duration
    ) async throws(OperationsError) -> MassExtendRenewalDateStatusResponse {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: patience)
        while true {
            let status: MassExtendRenewalDateStatusResponse
            do {
                status = try await client.massExtensionStatus(
                    productId: request.productId, requestIdentifier: request.requestIdentifier, target: target)
            } catch {
                throw OperationsError.api(error)
            }
            if status.complete == true || clock.now >= deadline { return status }
            try? await Task.sleep(for: interval)
        }
    }

    private func answer(_ r: MassRenewalExtensionRequest, outcome: String, appleError: String?) async throws(OperationsError) {
        try await execute(
            """
            UPDATE mass_renewal_extensions SET apple_outcome = \(outcome), apple_error = \(appleError)
            WHERE environment = \(r.environment) AND request_identifier = \(r.requestIdentifier) AND apple_outcome = 'pending'
            """, "recording Apple's answer")
    }

    /// The recorded mass extensions of `environment` (one, or the newest `limit`), newest first,
    /// each with what `SUMMARY` and `FAILURE` reported.
    public func recorded(
        environment: String, requestIdentifier: String? = nil, limit: Int = 20
    ) async throws(OperationsError) -> [MassRenewalExtensionStatus] {
        try await Self.recorded(environment: environment, requestIdentifier: requestIdentifier, limit: limit, database: database, logger: logger)
    }

    /// ``recorded(environment:requestIdentifier:limit:)`` without an API client (`appstorectl status`).
    public static func recorded(
        environment: String, requestIdentifier: String? = nil, limit: Int, database: PostgresClient, logger: Logger
    ) async throws(OperationsError) -> [MassRenewalExtensionStatus] {
        do {
            let rows = try await database.query(
                """
                SELECT m.bundle_id, m.product_id, m.request_identifier, m.storefront_country_codes, m.extend_by_days, m.reason_code::integer,
                    m.requested_by, m.requested_at, m.apple_outcome, m.apple_error, m.complete_date, m.succeeded_count, m.failed_count,
                    coalesce((SELECT array_agg(f.original_transaction_id ORDER BY f.original_transaction_id) FROM mass_renewal_extension_failures f
                              WHERE f.environment = m.environment AND f.request_identifier = m.request_identifier), '{}')
                FROM mass_renewal_extensions m
                WHERE m.environment = \(environment) AND (\(requestIdentifier)::text IS NULL OR m.request_identifier = \(requestIdentifier))
                ORDER BY m.requested_at DESC LIMIT \(limit)
                """, logger: logger)
            var found: [MassRenewalExtensionStatus] = []
            for try await row in rows {
                let (bundle, product, id, storefronts, days, reason, who, at, outcome, appleError) = try row.decode(
                    (String, String, String, [String]?, Int, Int, String, Date, String, String?).self)
                let cells = row.makeRandomAccess()
                found.append(
                    MassRenewalExtensionStatus(
                        environment: environment, bundleId: bundle, productId: product, requestIdentifier: id, storefrontCountryCodes: storefronts,
                        extendByDays: days, reasonCode: reason, requestedBy: who, requestedAt: at, appleOutcome: outcome, appleError: appleError,
                        reportedComplete: try cells[10].decode(Date?.self), reportedSucceededCount: try cells[11].decode(Int64?.self),
                        reportedFailedCount: try cells[12].decode(Int64?.self), failedOriginalTransactionIds: try cells[13].decode([String].self)))
            }
            return found
        } catch {
            throw OperationsError(.storeUnavailable, "reading mass extensions failed: \(String(reflecting: error).prefix(300))")
        }
    }

    /// ``recorded(environment:requestIdentifier:limit:)`` of the target's app, each accepted one with
    /// Apple's status endpoint's answer.
    public func status(
        requestIdentifier: String?, target: AppStoreServerAPIClient.Target, limit: Int = 20
    ) async throws(OperationsError) -> [MassRenewalExtensionStatus] {
        var all = try await recorded(environment: target.environment.rawValue, requestIdentifier: requestIdentifier, limit: limit)
            .filter { $0.bundleId == target.bundleId }
        for i in all.indices where all[i].appleOutcome == "accepted" {
            do {
                let apple = try await client.massExtensionStatus(
                    productId: all[i].productId, requestIdentifier: all[i].requestIdentifier, target: target)
                all[i].appleComplete = apple.complete
                all[i].appleCompleteDate = apple.completeDate
                all[i].appleSucceededCount = apple.succeededCount
                all[i].appleFailedCount = apple.failedCount
            } catch {
                throw OperationsError.api(error)
            }
        }
        return all
    }

    private func execute(_ query: PostgresQuery, _ what: String) async throws(OperationsError) {
        do {
            try await database.query(query, logger: logger)
        } catch {
            throw OperationsError(.storeUnavailable, "\(what) failed: \(String(reflecting: error).prefix(300))")
        }
    }
}
