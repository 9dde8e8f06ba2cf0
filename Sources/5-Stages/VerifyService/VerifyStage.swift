import AppStore
import EnvironmentSettings
import ErrorClassification
import Foundation
import KafkaClient
import LogKeys
import Logging
import Metrics
import PipelineMessages
import PipelineRecords
import StageRuntime
import X509

/// The verify stage: a raw record in, a verified record out, or a typed rejection for the DLQ.
///
/// Every JWS (the notification and each nested one, or an uploaded transaction) must pass the
/// verifier: ES256 signature, `x5c` chain to a trusted root with Apple's markers at the validation
/// time, and bundle ID / environment / app Apple ID of a configured app. Output records are keyed
/// by purchase (``VerifiedRecord/key``) so one subscription's events stay ordered on one partition.
public struct VerifyStage: PipelineStage {
    public let name = "verify"
    /// The one verifier, shared by every partition's task (it is thread-safe and caches chains).
    public let verifier: SignedDataVerifier
    let outputTopic: String
    let appsByBundleId: [String: AppStoreApp]
    let logger: Logger
    let clock: @Sendable () -> Date

    public init(
        configuration: VerifyConfiguration, outputTopic: String = Topics.verified, logger: Logger,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(AppStoreConfigurationError) {
        verifier = try SignedDataVerifier(configuration: configuration.verifierConfiguration)
        self.outputTopic = outputTopic
        appsByBundleId = Dictionary(configuration.apps.map { ($0.bundleId, $0) }, uniquingKeysWith: { first, _ in first })
        self.logger = logger
        self.clock = clock
        logger.info(
            "verifier configured",
            metadata: [
                LogKey.appStoreApps:
                    "\(configuration.apps.map { "\($0.bundleId):\($0.environments.map(\.rawValue).sorted().joined(separator: "+"))" })",
                LogKey.appStoreValidationTime: "\(ValidationTimeOption.describe(configuration.validationTime))",
                LogKey.appStoreChainCache: "\(configuration.chainCache.isEnabled ? "on" : "off")",
                LogKey.appStoreRevocationCheck: "\(configuration.checksRevocation ? "on" : "off")",
            ])
        if !configuration.additionalTrustedRoots.isEmpty {
            logger.notice(
                "additional trusted roots configured; honoured for non-Production data only",
                metadata: [
                    LogKey.appStoreRoots: "\(configuration.additionalTrustedRoots.map { String(describing: $0.subject) })"
                ])
        }
    }

    public func process(_ message: KafkaMessage) async throws -> [KafkaOutgoingMessage] {
        let source = message.headers.string(PipelineHeader.source)
        let record = try await verify(rawBody: message.value, source: source)
        guard let key = record.key else {
            throw MalformedRecord.error("the verified notification names neither an originalTransactionId nor a notificationUUID")
        }
        logger.debug(
            "verified",
            metadata: [
                LogKey.partition: "\(message.partition)", LogKey.offset: "\(message.offset)",
                LogKey.notificationUUID: "\(record.notificationUUID ?? "-")",
                LogKey.originalTransactionId: "\(record.originalTransactionId ?? "-")",
                LogKey.notificationType: "\(record.notification?.notificationType?.rawValue ?? record.kind.rawValue)",
            ])
        Self.noteReceived(record)
        return [try VerifiedMessage.make(record, key: key, topic: outputTopic, following: message.headers)]
    }

    /// Verifies one raw body and builds its record; no Kafka involved (the tests and replay tools
    /// call it directly).
    /// - Throws: ``VerificationFailure`` for a rejected JWS, `StageError` `record.malformed` for a
    ///   body that holds no JWS to verify or an unknown `source` header.
    public func verify(rawBody: [UInt8], source: String?) async throws -> VerifiedRecord {
        if let source, !Self.knownSources.contains(source) {
            throw MalformedRecord.error("the source header \"\(source.prefix(40))\" is none of \(Self.knownSources.sorted().joined(separator: ", "))")
        }
        switch try Self.read(rawBody, source: source) {
        case .notification(let signedPayload):
            let verified: VerifiedNotification
            do {
                verified = try await verifier.verifyNotification(signedPayload: signedPayload)
            } catch {
                throw VerificationFailure(error)
            }
            return VerifiedRecord(
                notification: verified, signedPayload: signedPayload,
                source: source ?? PipelineHeader.Source.appleWebhook, verifiedAt: now())
        case .transaction(let signedTransaction, let hints):
            let transaction: JWSTransactionDecodedPayload
            do {
                transaction = try await verifier.verifyTransaction(signedTransaction)
            } catch {
                throw VerificationFailure(error)
            }
            // The verifier has checked both against a configured app.
            guard let bundleId = transaction.bundleId, let environment = transaction.environment else {
                throw VerificationFailure(AppStoreVerificationError(.wrongBundleId, "the transaction names no app or environment"))
            }
            guard let originalTransactionId = transaction.originalTransactionId, !originalTransactionId.isEmpty else {
                throw MalformedRecord.error("the uploaded transaction has no originalTransactionId")
            }
            return VerifiedRecord(
                kind: .transaction, source: source ?? PipelineHeader.Source.appUpload, environment: environment,
                bundleId: bundleId, appAppleId: appsByBundleId[bundleId]?.appAppleId,
                originalTransactionId: originalTransactionId, transactionId: transaction.transactionId,
                transaction: transaction, hints: hints, signedTransaction: signedTransaction, verifiedAt: now())
        case .receipt(let receipt, let hints):
            let (bundleId, environment) = try route(receipt)
            return VerifiedRecord(
                kind: .transaction, source: PipelineHeader.Source.appReceipt, environment: environment, bundleId: bundleId,
                appAppleId: appsByBundleId[bundleId]?.appAppleId, transactionId: receipt.transactionId, hints: hints, verifiedAt: now())
        }
    }

    /// Where a receipt's transaction is looked up: its shape checked (nothing in a receipt is
    /// signed by anyone verify trusts; enrich's lookup is what Apple confirms), its app one of the
    /// configured apps (the receipt's bundle ID, or the only app), and its environment one the app
    /// is configured for (the receipt's, or the app's only one, else Production).
    func route(_ receipt: RawRecord.ReceiptReference) throws -> (bundleId: String, environment: AppStoreEnvironment) {
        let id = receipt.transactionId
        guard RawRecord.ReceiptReference.isValidTransactionId(id) else {
            throw MalformedRecord.error("the receipt's transactionId is not Apple's numeric ID")
        }
        let app: AppStoreApp
        if let bundleId = receipt.bundleId {
            guard let configured = appsByBundleId[bundleId] else {
                throw VerificationFailure(
                    AppStoreVerificationError(.wrongBundleId, "the receipt is from \(bundleId.prefix(100)), not a configured app"))
            }
            app = configured
        } else if appsByBundleId.count == 1, let only = appsByBundleId.values.first {
            app = only
        } else {
            throw VerificationFailure(AppStoreVerificationError(.wrongBundleId, "the receipt names no app and several apps are configured"))
        }
        let said = receipt.environment.map { AppStoreEnvironment(rawValue: $0) }
        let environment: AppStoreEnvironment
        if let said {
            guard app.environments.contains(said) else {
                throw VerificationFailure(
                    AppStoreVerificationError(.wrongEnvironment, "the receipt is from \(said.rawValue), which \(app.bundleId) is not configured for"))
            }
            environment = said
        } else if app.environments.count == 1, let only = app.environments.first {
            environment = only
        } else {
            environment = .production
        }
        guard environment == .production || environment == .sandbox else {
            throw VerificationFailure(
                AppStoreVerificationError(
                    .wrongEnvironment, "a receipt from \(environment.rawValue) cannot be looked up: Apple's API serves Sandbox and Production"))
        }
        return (app.bundleId, environment)
    }

    /// `notification_last_received_timestamp_seconds{app, environment}`: the UNIX time at which
    /// verify last passed a notification Apple's webhook delivered, per bundle ID and environment.
    /// Apple silent for hours means the webhook is broken; records from the notification-history
    /// backfill, reconciliation and app uploads prove nothing about the webhook and are not counted.
    static func noteReceived(_ record: VerifiedRecord) {
        guard record.kind == .notification, record.source == PipelineHeader.Source.appleWebhook else { return }
        Gauge(
            label: "notification_last_received_timestamp_seconds",
            dimensions: [
                ("app", record.bundleId), ("environment", record.environment.rawValue),
            ]
        ).record(record.verifiedAt.timeIntervalSince1970)
    }

    /// The `source` header values a raw record may carry (schemas/headers.md).
    static let knownSources: Set<String> = [
        PipelineHeader.Source.appleWebhook, PipelineHeader.Source.appUpload, PipelineHeader.Source.notificationHistory,
        PipelineHeader.Source.reconcile, PipelineHeader.Source.appReceipt,
    ]

    /// The clock's time in whole milliseconds, as every date in the record is written.
    private func now() -> Date {
        AppStoreJSON.date(milliseconds: AppStoreJSON.milliseconds(since1970: clock()))
    }
}

extension VerifyStage {
    /// The raw body as a ``RawRecord``; one that cannot be read is dead-lettered as malformed.
    static func read(_ body: [UInt8], source: String?) throws(StageError) -> RawRecord {
        do {
            return try RawRecord.parse(body, source: source)
        } catch {
            throw MalformedRecord.error(error.message)
        }
    }
}
